"""The Python environment the package runs from, and the subprocess calls into it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from qmd_daemon.settings import SetupSettings
from qmd_daemon.setup import progress
from qmd_daemon.setup.journal import Journal, SetupError
from qmd_daemon.setup.llama_wheel import (
    LLAMA_VERSION,
    compile_notice,
    find_links,
    llama_installed,
    prebuilt_llama_wheel,
)
from qmd_daemon.setup.paths import REPO_ROOT

MIN_PYTHON = (3, 11)


def env_python(env: Path) -> Path:
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def resolve_env(path: Path) -> Path:
    """An environment folder, given the folder or its interpreter (`.venv/bin/python`)."""
    path = path.expanduser().absolute()
    return path.parent.parent if path.is_file() else path


def env_bin(env: Path) -> Path:
    return env / ("Scripts" if os.name == "nt" else "bin")


def base_python() -> str:
    """The interpreter that creates the virtual environment (QMD_SETUP_BASE_PYTHON, else this one)."""
    return SetupSettings.from_env().base_python or sys.executable


def python_version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.fullmatch(r"(\d+)\.(\d+)", out.stdout.strip())
    return (int(match.group(1)), int(match.group(2))) if out.returncode == 0 and match else None


def has_pip(python: str) -> bool:
    try:
        out = subprocess.run(
            [python, "-m", "pip", "--version"], capture_output=True, timeout=120, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0


def prerequisites(python: str, need_pip: bool) -> list[str]:
    """What is missing, one line each (empty: all there)."""
    problems = []
    version = python_version(python)
    if version is None:
        problems.append(f"Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer is required; {python} does not run")
    elif version < MIN_PYTHON:
        problems.append(
            f"Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer is required; {python} is "
            f"{version[0]}.{version[1]}"
        )
    if need_pip and version is not None and not has_pip(python):
        problems.append(f"pip is required; `{python} -m pip` is not available (install python3-pip)")
    return problems


def default_package_spec() -> str:
    """This checkout when it is one (install.sh sits beside pyproject.toml), else the PyPI name."""
    return str(REPO_ROOT) if (REPO_ROOT / "pyproject.toml").exists() else "qmd-daemon"


def with_extra(spec: str, extra: str) -> str:
    """SPEC with `[extra]` added (`/path/to/checkout[small]`, `qmd-daemon[small]`, `x.whl[small]`)."""
    if spec.endswith("]"):
        head, _, extras = spec[:-1].partition("[")
        names = [e.strip() for e in extras.split(",") if e.strip()]
        return spec if extra in names else f"{head}[{','.join([*names, extra])}]"
    return f"{spec}[{extra}]"


def create_venv(journal: Journal, venv: Path, spec: str, pip_args: list[str], *, log: Path) -> None:
    """`python -m venv` + `pip install <spec>`; the whole tree is removed again on rollback (the
    caller keeps it once the install succeeded: see Journal.keep)."""
    journal.ensure_dir(venv.parent)
    journal.created_tree(venv)
    run_checked([base_python(), "-m", "venv", str(venv)], "create the virtual environment")
    extra = SetupSettings.from_env().venv_extra_site
    if extra:  # test seam: lend the fresh venv already-installed dependencies (no network in tests)
        site = run_json(
            [
                str(env_python(venv)),
                "-c",
                "import json, sysconfig; print(json.dumps(sysconfig.get_paths()['purelib']))",
            ]
        )
        Path(site, "_qmd_setup_extra.pth").write_text(extra + "\n", encoding="utf-8")
    pip_install(venv, spec, pip_args, log=log, echo=journal.note)


def pip_install(
    venv: Path, spec: str, pip_args: list[str], *, log: Path, echo: Callable[[str], None]
) -> None:
    """pip install SPEC into VENV, saying first whether llama-cpp-python comes prebuilt or is
    compiled (and how long that takes), then showing progress at least every PROGRESS_SECONDS."""
    args = list(pip_args)
    if "--no-deps" not in args and not llama_installed(venv):
        wheel = prebuilt_llama_wheel(args)
        if wheel is not None:
            echo(f"llama-cpp-python {LLAMA_VERSION}: using the prebuilt wheel {wheel}")
            if wheel.parent not in find_links(args):
                args.append(f"--find-links={wheel.parent}")
        else:
            echo(compile_notice(args))
            args.append("-v")  # the build's own lines (cmake, the compiler) feed the progress ticker
    cmd = [str(env_python(venv)), "-m", "pip", "install", "--disable-pip-version-check", *args, spec]
    with checkout_left_as_found(spec):
        progress.run_with_progress(cmd, f"pip install {spec}", log=log, echo=echo)


# what building a wheel from a source folder writes into it (setuptools' build and egg-info folders)
BUILD_LEFTOVERS = ("build", "*.egg-info")


@contextlib.contextmanager
def checkout_left_as_found(spec: str) -> Iterator[None]:
    """pip builds a source folder's wheel inside it: a checkout the user cloned kept a `build/`
    copy of the package after the install. What the build adds is removed again; what was there
    before (a developer's editable install's egg-info) stays."""
    folder = Path(spec.partition("[")[0])
    if not folder.is_dir():  # a PyPI name or a wheel file
        yield
        return

    def leftovers() -> set[Path]:
        return {path for pattern in BUILD_LEFTOVERS for path in folder.glob(pattern)}

    before = leftovers()
    try:
        yield
    finally:
        for path in leftovers() - before:
            shutil.rmtree(path, ignore_errors=True)


def run_checked(
    cmd: list[str],
    what: str,
    *,
    capture: bool = False,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(cmd, text=True, capture_output=capture, env=env, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SetupError(f"cannot {what}: {exc}") from None
    if proc.returncode != 0:
        tail = ""
        if capture:
            tail = ": " + ((proc.stderr or "").strip().splitlines() or ["no output"])[-1]
        raise SetupError(f"cannot {what} (exit {proc.returncode}){tail}")
    return proc


def run_json(
    cmd: list[str], what: str = "", *, env: dict[str, str] | None = None, timeout: float | None = None
) -> Any:
    """Run a command whose last stdout line is JSON; stderr (progress) passes through to the user."""
    try:
        proc = subprocess.run(
            cmd, text=True, stdout=subprocess.PIPE, stderr=None, env=env, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise SetupError(f"{what or cmd[0]} timed out") from None
    except OSError as exc:
        raise SetupError(f"cannot run {what or cmd[0]}: {exc}") from None
    text = proc.stdout.strip()
    if proc.returncode not in (0, 1) or not text:
        raise SetupError(f"{what or cmd[0]} failed (exit {proc.returncode})")
    try:
        data = json.loads(text[text.find("{") :] if "{" in text else text)
    except ValueError:
        raise SetupError(f"{what or cmd[0]} printed no JSON result") from None
    if proc.returncode != 0 and not (isinstance(data, dict) and "devices" in data):
        raise SetupError(f"{what or cmd[0]} failed")
    return data


def task(python: Path, *args: str, what: str) -> Any:
    """`python -m qmd_daemon.setup.tasks ...` in the target environment; its stderr (progress bars,
    the one-line error) goes straight to the user."""
    try:
        proc = subprocess.run(
            [str(python), "-m", "qmd_daemon.setup.tasks", *args],
            text=True,
            stdout=subprocess.PIPE,
            check=False,
            cwd=str(Path.home()),
        )
    except OSError as exc:
        raise SetupError(f"cannot {what}: {exc}") from None
    if proc.returncode != 0:
        raise SetupError(f"cannot {what} (the reason is printed above)")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def has_module(python: Path, module: str) -> bool:
    """Whether MODULE can be imported by the environment's interpreter."""
    probe = subprocess.run(
        [str(python), "-c", f"import importlib.util as u, sys; sys.exit(not u.find_spec({module!r}))"],
        capture_output=True,
        check=False,
        cwd=str(Path.home()),
    )
    return probe.returncode == 0


def find_client(python: Path, env: Path, name: str) -> list[str] | None:
    """argv that runs client `name` (ai-search, qmd-warm, qmd-daemon) with the environment's Python."""
    script = env_bin(env) / (f"{name}.exe" if os.name == "nt" else name)
    if script.exists():
        return [str(script)]
    if name == "qmd-daemon":
        return [str(python), "-c", "from qmd_daemon.cli import main; main()"]
    module = "clients." + name.replace("-", "_")
    probe = subprocess.run(
        [str(python), "-c", f"import importlib.util as u; print(bool(u.find_spec({module!r})))"],
        capture_output=True,
        text=True,
        check=False,
        cwd=str(Path.home()),
    )
    if probe.stdout.strip() == "True":
        return [str(python), "-m", module]
    source = REPO_ROOT / "clients" / f"{name.replace('-', '_')}.py"
    return [str(python), str(source)] if source.exists() else None
