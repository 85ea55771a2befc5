"""QMD_FORCE_CPU hides the GPUs from llama.cpp before it is imported.

Why: a CUDA build of llama.cpp makes a CUDA context when it is imported, whether or not a model is
offloaded: every process forced onto the CPU still held ~527 MiB of an H200's memory (2026-12-04,
bench/device). This machine's llama.cpp is a CPU build, so the test checks what the CUDA runtime
reads, in a real process, at the moment llama_cpp is imported (an audit hook); the memory itself is
checked by bench/device/run.sh on a GPU machine.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

RUN = """
import os, sys
seen = []
def hook(event, args):
    if event == "import" and args[0] == "llama_cpp" and not seen:
        seen.append(os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"))
sys.addaudithook(hook)
from qmd_daemon.models.runtime import llama_module
llama_module()
print("AT-IMPORT=" + seen[0])
"""


def _visible_at_import(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("QMD_FORCE_CPU", "CUDA_VISIBLE_DEVICES")}
    proc = subprocess.run([sys.executable, "-c", RUN], env={**clean, **env}, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split("AT-IMPORT=", 1)[1].strip()


@pytest.mark.parametrize("preset", [{}, {"CUDA_VISIBLE_DEVICES": "0"}])
def test_force_cpu_hides_gpus_before_llama_cpp_loads(preset: dict[str, str]) -> None:
    assert _visible_at_import(QMD_FORCE_CPU="1", **preset) == ""


def test_gpus_stay_visible_without_force_cpu() -> None:
    assert _visible_at_import() == "<unset>"
    assert _visible_at_import(CUDA_VISIBLE_DEVICES="1") == "1"
