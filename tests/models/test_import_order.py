"""llama.cpp's library is loaded before numpy (and, in the daemon, before aiohttp) in every
command that loads a model.

Why: with numpy imported first, a CUDA build of llama.cpp crashed (SIGSEGV) at the first model
load, on GPU and CPU alike (bench/device_check.py on an H200; see models.runtime.llama_module);
so did the daemon, whose server module (aiohttp and the rest) was imported first (2026-12-04,
models.runtime.load_llama_first). This machine's llama.cpp is a CPU build that does not crash
either way, so the test checks the order itself, in real processes, with an audit hook that
records first imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qmd_daemon.config import IndexConfig
from qmd_daemon.settings import Settings
from tests.conftest import MODELS_DIR, write_tree

RUN = """
import runpy, sys
order = []
def hook(event, args):
    if event == "import" and args[0] in ("numpy", "aiohttp", "llama_cpp") and args[0] not in order:
        order.append(args[0])
sys.addaudithook(hook)
module, sys.argv = sys.argv[1], ["qmd-daemon", *sys.argv[2:]]
try:
    if module == "cli":
        from qmd_daemon.cli import main
        main()
    else:
        runpy.run_module(module, run_name="__main__")
finally:
    print("IMPORT-ORDER=" + ",".join(order), file=sys.stderr)
"""


def _first_imports(env: dict[str, str], module: str, *args: str) -> list[str]:
    """Run `module` (or "cli": the qmd-daemon command) in a fresh interpreter; the first-import order."""
    proc = subprocess.run([sys.executable, "-c", RUN, module, *args], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("IMPORT-ORDER="))
    return [m for m in line.split("=", 1)[1].split(",") if m]


def _assert_llama_first(order: list[str], what: str) -> None:
    assert "llama_cpp" in order, f"{what} loaded no model: the check would prove nothing"
    assert order[0] == "llama_cpp", f"{what}: {order}"


@pytest.mark.usefixtures("small_models")
def test_llama_cpp_is_imported_before_numpy(home: Path, tmp_path: Path) -> None:
    env = dict(os.environ, QMD_MODELS_DIR=str(MODELS_DIR))
    config = IndexConfig.load(Settings.from_env().config_file)
    config.set_models({"profile": "small"})
    config.save()
    code = "def backoff(n):\n    return [2 ** i for i in range(n)]\n"
    root = write_tree(tmp_path / "proj", {"net/retry.py": code})
    _first_imports(env, "cli", "collection", "add", str(root), "--name", "proj")
    _first_imports(env, "cli", "update")
    for command in (("embed",), ("search", "wait longer after each failure", "--json", "--rerank")):
        _assert_llama_first(_first_imports(env, "cli", *command), command[0])


@pytest.mark.usefixtures("small_models")
def test_auto_benchmark_child_imports_llama_cpp_before_numpy(tmp_path: Path) -> None:
    """The process that crashed on the GPU machine: `bench --auto`'s per-device child."""
    env = dict(os.environ, QMD_MODELS_DIR=str(MODELS_DIR))
    order = _first_imports(env, "qmd_daemon.setup.bench", "--child", "cpu", "--profile", "small",
                           "--workdir", str(tmp_path / "work"))
    _assert_llama_first(order, "bench --child")


@pytest.mark.usefixtures("small_models")
@pytest.mark.parametrize("module", ["qmd_daemon.daemon", "cli"])
def test_daemon_imports_llama_cpp_before_its_server(home: Path, module: str) -> None:
    """The daemon as the clients start it (`python -m qmd_daemon.daemon serve`) and as
    `qmd-daemon serve`: on the H200 every daemon that loaded a model died with SIGSEGV, while
    `qmd-daemon embed` and the in-process search, which never import aiohttp, did not."""
    env = dict(os.environ, QMD_MODELS_DIR=str(MODELS_DIR), QMD_IDLE_MINUTES="0")  # exits after 2 s idle
    config = IndexConfig.load(Settings.from_env().config_file)
    config.set_models({"profile": "small"})
    config.save()
    _assert_llama_first(_first_imports(env, module, "serve"), f"{module} serve")
