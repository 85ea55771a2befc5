"""Installer tests: a temporary HOME (and QMD_DAEMON_HOME), the offline `small` profile (built
once into .test-cache/models and shared through QMD_MODELS_DIR), and install.sh run for real."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qmd_daemon.setup.paths import SetupPaths
from tests.conftest import MODELS_DIR, REPO_ROOT

INSTALL_SH = REPO_ROOT / "install.sh"
VENV = Path(sys.prefix)


@pytest.fixture(scope="session")
def small_profile(small_models: dict[str, Path]) -> Path:
    """The folder holding the small profile's models (QMD_MODELS_DIR)."""
    return MODELS_DIR


@pytest.fixture
def fake_home(tmp_path: Path, small_profile: Path) -> dict[str, str]:
    """Environment for install.sh: everything it may touch lives under tmp_path/home."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("QMD_", "XDG_", "CODEX_", "CLAUDE_", "HF_"))
    }
    env.pop("PYTHONPATH", None)
    env.update(
        HOME=str(home),
        QMD_DAEMON_HOME=str(home / ".qmd"),
        QMD_MODELS_DIR=str(small_profile),
        QMD_PYTHON=sys.executable,
        HF_HOME=str(tmp_path / "hf"),
        HF_HUB_OFFLINE="1",
        QMD_IDLE_MINUTES="2",
        TMPDIR=str(tmp_path / "tmp"),
    )
    (tmp_path / "tmp").mkdir()
    real_home = Path(os.path.expanduser("~"))
    for var, folder in (("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")):  # toolchain shims on PATH
        env.setdefault(var, str(real_home / folder))
    return env


def run_install(
    env: dict[str, str], *args: str, timeout: float = 300, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """install.sh as a user runs it: stdin not a terminal, INPUT piped in (`echo y | ./install.sh`)
    or, without it, nothing to read."""
    return subprocess.run(
        ["sh", str(INSTALL_SH), *args],
        env=env,
        cwd=env["HOME"],
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def yes_small(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    """Yes with the small profile, reusing this test environment (not owned by the setup)."""
    return run_install(
        env, "--semantic-retrieval", "yes", "--profile", "small", "--python-env", str(VENV), *extra
    )


def listing(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every file and folder under root -> sha256 of its bytes ('dir' for folders)."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if skip and rel.startswith(skip):
            continue
        out[rel] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return out


def build_wheel(out_dir: Path) -> Path:
    """A pure-Python wheel of this checkout, zipped by hand.

    Offline, a fresh venv's setuptools (65, from ensurepip) cannot build one (no bdist_wheel
    without the `wheel` package), so the test builds it and the installer's real
    `pip install --no-index --no-deps <wheel>` installs it.
    """
    import base64
    import tomllib
    import zipfile

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    name, version = project["name"].replace("-", "_"), project["version"]
    dist = f"{name}-{version}.dist-info"
    include = str(tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"])
    packages = ["qmd_daemon"] + (["clients"] if "clients" in include else [])
    files: dict[str, bytes] = {}
    for package in packages:
        for path in sorted((REPO_ROOT / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                files[str(path.relative_to(REPO_ROOT))] = path.read_bytes()
    scripts = "".join(f"{k} = {v}\n" for k, v in project.get("scripts", {}).items())
    files[f"{dist}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {version}\n".encode()
    )
    files[f"{dist}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{dist}/entry_points.txt"] = f"[console_scripts]\n{scripts}".encode()
    record = []
    for rel, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = out_dir / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, data in files.items():
            zf.writestr(rel, data)
    return wheel


def setup_paths(root: Path) -> SetupPaths:
    """Every location the setup writes, under ROOT."""
    return SetupPaths(
        home=root,
        config_dir=root / "config",
        state_dir=root / "state",
        models_dir=root / "models",
        data_dir=root / "data",
        bin_dir=root / "bin",
        claude_dir=root / ".claude",
        codex_dir=root / ".codex",
    )
