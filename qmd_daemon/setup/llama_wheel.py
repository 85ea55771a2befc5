"""Is a prebuilt llama-cpp-python wheel at hand, or will pip compile it (about 8 minutes on 2 cores)?

PyPI ships llama-cpp-python as source only. Before the install the setup looks where a wheel may
lie: the --find-links folders given with --pip-arg (and PIP_FIND_LINKS), the shared wheels folder
next to the checkout (../shared/wheels), and the wheels pip built before (its cache), and hands the
folder of a matching one to pip. Otherwise it says up front that a compile follows and how long.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from qmd_daemon.setup.paths import REPO_ROOT
from qmd_daemon.setup.progress import PROGRESS_SECONDS

# CPU-minutes one build of llama.cpp took here (about 8 minutes of wall time on 2 cores).
COMPILE_CPU_MINUTES = 16


def pinned_version() -> str:
    """The llama-cpp-python version pyproject.toml pins ('' outside a checkout)."""
    try:
        text = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return ""
    match = re.search(r'"llama-cpp-python==([^";\s]+)', text)
    return match.group(1) if match else ""


LLAMA_VERSION = pinned_version()


def find_links(pip_args: list[str]) -> list[Path]:
    """Folders named by --find-links / -f in PIP_ARGS and PIP_FIND_LINKS."""
    out: list[Path] = []
    it = iter(pip_args)
    for arg in it:
        if arg.startswith("--find-links="):
            out.append(Path(arg.split("=", 1)[1]))
        elif arg in ("--find-links", "-f"):
            out.append(Path(next(it, "")))
    out += [Path(p) for p in os.environ.get("PIP_FIND_LINKS", "").split() if "://" not in p]
    return [p.expanduser().resolve() for p in out if str(p)]


def shared_wheels() -> Path:
    return REPO_ROOT.parent / "shared" / "wheels"


def _compatible(wheel: Path) -> bool:
    """Whether a wheel's tags fit this interpreter and platform (name-version-py-abi-platform)."""
    parts = wheel.name[: -len(".whl")].split("-")
    if len(parts) < 5 or parts[1] != LLAMA_VERSION:
        return False
    py, plat = parts[-3], parts[-1]
    this_py = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    if not any(tag in ("py3", this_py) for tag in py.split(".")):
        return False
    if plat == "any":
        return True
    system = {"linux": "linux", "darwin": "macosx", "win32": "win"}.get(sys.platform, sys.platform)
    machine = os.uname().machine if hasattr(os, "uname") else os.environ.get("PROCESSOR_ARCHITECTURE", "")
    machine = {"AMD64": "amd64", "aarch64": "aarch64", "arm64": "arm64"}.get(machine, machine)
    return any(tag.startswith(system) and machine.lower() in tag.lower() for tag in plat.split("."))


def _pip_cache_wheels() -> list[Path]:
    """llama-cpp-python wheels pip built before (its wheel cache)."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "cache", "list", "llama_cpp_python", "--format=abspath"],
            capture_output=True, text=True, timeout=60, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [Path(line.strip()) for line in proc.stdout.splitlines() if line.strip().endswith(".whl")]


def searched_places(pip_args: list[str]) -> list[Path]:
    return [*find_links(pip_args), shared_wheels()]


def prebuilt_llama_wheel(pip_args: list[str]) -> Path | None:
    """A wheel of the pinned llama-cpp-python that fits this machine, or None."""
    if not LLAMA_VERSION:
        return None
    for folder in searched_places(pip_args):
        for wheel in sorted(folder.glob("llama_cpp_python-*.whl")) if folder.is_dir() else []:
            if _compatible(wheel):
                return wheel
    return next((w for w in _pip_cache_wheels() if _compatible(w)), None)


def llama_installed(venv: Path) -> bool:
    """Whether VENV already holds the pinned llama-cpp-python (an upgrade then builds nothing)."""
    pattern = f"llama_cpp_python-{LLAMA_VERSION or '*'}.dist-info"
    return any(venv.glob(f"lib/python3*/site-packages/{pattern}")) or any(
        venv.glob(f"Lib/site-packages/{pattern}")
    )


def compile_notice(pip_args: list[str]) -> str:
    cores = os.cpu_count() or 1
    minutes = max(2, round(COMPILE_CPU_MINUTES / cores))
    looked = ", ".join(str(p) for p in searched_places(pip_args))
    return (
        f"llama-cpp-python {LLAMA_VERSION or ''}: no prebuilt wheel found (looked in {looked} and "
        f"pip's cache), so pip compiles it from source now: expect about {minutes} minutes on {cores} "
        f"cores; progress at least every {PROGRESS_SECONDS:g} s (next time, "
        "--pip-arg=--find-links=DIR with a wheel in DIR skips this)"
    )
