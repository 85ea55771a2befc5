"""A long pip install says what it does: a prebuilt llama-cpp-python wheel is found where one lies,
and a long command shows progress lines at a steady pace (real subprocesses, short intervals)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from qmd_daemon.setup import llama_wheel
from qmd_daemon.setup.envs import checkout_left_as_found
from qmd_daemon.setup.journal import SetupError
from qmd_daemon.setup.progress import run_with_progress

VERSION = llama_wheel.LLAMA_VERSION
LINUX_WHEEL = f"llama_cpp_python-{VERSION}-py3-none-linux_x86_64.whl"


def test_a_wheel_in_a_find_links_folder_is_found_first(tmp_path: Path):
    (tmp_path / f"llama_cpp_python-0.0.1-py3-none-{_platform_tag()}.whl").touch()  # other version
    wheel = tmp_path / f"llama_cpp_python-{VERSION}-py3-none-{_platform_tag()}.whl"
    wheel.touch()
    assert llama_wheel.prebuilt_llama_wheel(["--find-links", str(tmp_path)]) == wheel
    assert llama_wheel.prebuilt_llama_wheel([f"--find-links={tmp_path}"]) == wheel


def test_only_wheels_for_this_machine_count():
    assert llama_wheel._compatible(Path(f"llama_cpp_python-{VERSION}-py3-none-{_platform_tag()}.whl"))
    assert not llama_wheel._compatible(Path(f"llama_cpp_python-{VERSION}-py3-none-win_arm64.whl"))
    assert not llama_wheel._compatible(Path(f"llama_cpp_python-{VERSION}-cp27-cp27m-{_platform_tag()}.whl"))
    assert not llama_wheel._compatible(Path(f"llama_cpp_python-0.0.1-py3-none-{_platform_tag()}.whl"))


def test_the_compile_notice_says_how_long_and_where_it_looked():
    notice = llama_wheel.compile_notice(["--find-links=/nowhere"])
    assert "compiles it from source" in notice and "minutes on" in notice
    assert "/nowhere" in notice and "every 10 s" in notice


def test_a_quiet_long_command_shows_progress_at_a_steady_pace(tmp_path: Path):
    go = tmp_path / "go"
    # a build that goes quiet after one line until the test has seen three progress lines about
    # it (60 s: a ceiling, so a broken ticker fails rather than hangs)
    script = (
        "import pathlib, sys, time\n"
        "print('Collecting llama-cpp-python', flush=True)\n"
        "print('[ 20%] Building C object ggml.c', flush=True)\n"
        "ends = time.monotonic() + 60\n"
        "while not pathlib.Path(sys.argv[1]).exists() and time.monotonic() < ends:\n"
        "    time.sleep(0.05)\n"
        "print('[ 80%] Building C object ggml.c', flush=True)\n"
    )
    seen: list[str] = []
    quiet_ticks = "... build: ", "so far; 1 package collected; last: [ 20%] Building C object ggml.c"

    def echo(line: str) -> None:
        seen.append(line)
        if sum(tick.startswith(quiet_ticks[0]) and tick.endswith(quiet_ticks[1]) for tick in seen) == 3:
            go.touch()

    run_with_progress([sys.executable, "-c", script, str(go)], "build", log=tmp_path / "setup.log",
                      echo=echo, interval=0.5)
    ticks = [line for line in seen if line.startswith("... build: ")]
    # a collected package is counted in the ticks, not echoed (a tick may come first while the
    # interpreter starts)
    assert [line for line in seen if line not in ticks] == []
    assert go.exists(), "no steady progress while the command was quiet"
    assert "[ 80%] Building C object" in (tmp_path / "setup.log").read_text()


def test_an_install_echoes_its_steps_not_one_line_per_package(tmp_path: Path):
    """A first install collects ~75 packages: their lines went to the terminal one by one and
    drowned the steps around them. Now the building of a wheel is echoed, the packages counted."""
    script = (
        "for name in ['numpy', 'click', 'pyyaml']:\n"
        "    print(f'Collecting {name}', flush=True)\n"
        "    print(f'  Using cached {name}.whl', flush=True)\n"
        "print('Building wheel for qmd-daemon (pyproject.toml): started', flush=True)\n"
        "print('Installing collected packages: numpy, click, pyyaml, qmd-daemon', flush=True)\n"
        "print('Successfully installed click-8 numpy-2 pyyaml-6 qmd-daemon-0.1', flush=True)\n"
    )
    seen: list[str] = []
    log = tmp_path / "setup.log"
    run_with_progress([sys.executable, "-c", script], "pip install x", log=log, echo=seen.append, interval=60)
    assert seen == [
        "Building wheel for qmd-daemon (pyproject.toml): started",
        f"pip installed 4 packages (their versions: {log})",
    ]
    assert "Collecting click" in log.read_text() and "pyyaml-6" in log.read_text()


def test_an_install_from_a_checkout_leaves_no_build_folder_in_it(tmp_path: Path):
    """pip builds a source folder's wheel in it (setuptools' `build/` and `<name>.egg-info/`): a
    user's clone kept a copy of the package in `build/` after install.sh. What the build adds goes;
    what was there before (a developer's editable install's egg-info) stays."""
    checkout = tmp_path / "qmd-daemon"
    (checkout / "dev.egg-info").mkdir(parents=True)
    with checkout_left_as_found(f"{checkout}[small]"):
        (checkout / "build" / "lib").mkdir(parents=True)  # what the wheel build writes
        (checkout / "qmd_daemon.egg-info").mkdir()
    assert sorted(p.name for p in checkout.iterdir()) == ["dev.egg-info"]
    # a failed install leaves the checkout as found too
    with pytest.raises(SetupError), checkout_left_as_found(str(checkout)):
        (checkout / "build").mkdir()
        raise SetupError("pip failed")
    assert sorted(p.name for p in checkout.iterdir()) == ["dev.egg-info"]


def test_a_failed_command_shows_its_last_lines_and_names_the_log(tmp_path: Path):
    seen: list[str] = []
    script = "import sys; print('error: cmake not found'); sys.exit(3)"
    with pytest.raises(SetupError, match=r"exit 3\).*setup\.log"):
        run_with_progress([sys.executable, "-c", script], "pip install x", log=tmp_path / "setup.log",
                          echo=seen.append, interval=1.0)
    assert "| error: cmake not found" in seen


def _platform_tag() -> str:
    import sysconfig

    return sysconfig.get_platform().replace("-", "_").replace(".", "_")
