"""llama.cpp's library is loaded before numpy in every command that loads a model.

Why: with numpy imported first, a CUDA build of llama.cpp crashed (SIGSEGV) at the first model
load, on GPU and CPU alike (bench/device_check.py on an H200; see models.runtime.llama_module).
This machine's llama.cpp is a CPU build that does not crash either way, so the test checks the
order itself, in real `qmd-daemon` processes, with an audit hook that records first imports.
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

RUN_CLI = """
import sys
order = []
def hook(event, args):
    if event == "import" and args[0] in ("numpy", "llama_cpp") and args[0] not in order:
        order.append(args[0])
sys.addaudithook(hook)
sys.argv = ["qmd-daemon", *sys.argv[1:]]
from qmd_daemon.cli import main
try:
    main()
finally:
    print("IMPORT-ORDER=" + ",".join(order), file=sys.stderr)
"""


def _first_imports(env: dict[str, str], *args: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", RUN_CLI, *args], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("IMPORT-ORDER="))
    return [m for m in line.split("=", 1)[1].split(",") if m]


@pytest.mark.usefixtures("small_models")
def test_llama_cpp_is_imported_before_numpy(home: Path, tmp_path: Path) -> None:
    env = dict(os.environ, QMD_MODELS_DIR=str(MODELS_DIR))
    config = IndexConfig.load(Settings.from_env().config_file)
    config.set_models({"profile": "small"})
    config.save()
    code = "def backoff(n):\n    return [2 ** i for i in range(n)]\n"
    root = write_tree(tmp_path / "proj", {"net/retry.py": code})
    _first_imports(env, "collection", "add", str(root), "--name", "proj")
    _first_imports(env, "update")
    for command in (("embed",), ("search", "wait longer after each failure", "--json")):
        order = _first_imports(env, *command)
        assert "llama_cpp" in order, f"{command[0]} loaded no model: the check would prove nothing"
        if "numpy" in order:
            assert order.index("llama_cpp") < order.index("numpy"), f"{command[0]}: {order}"
