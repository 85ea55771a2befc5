#!/bin/bash
# The whole GPU path in one device run (bench/device/README.md): llama-cpp-python built for CUDA,
# the daemon end to end (started by ai-search, embedding and answering on the GPU, against a
# QMD_FORCE_CPU=1 daemon), the abort flag on a GPU decode, bench/device_check.py --auto.
#   device:  bash bench/device/run.sh                (repo root; carry .device-carry)
#   here:    bash bench/device/run.sh --dry-run      (no CUDA build: this checkout's CPU llama.cpp)
# Env: OUT (default /tmp/qmd-device-out; the device sets it), CARRY (.device-carry), BUDGET
# (seconds for everything, default 540: the run's timeout_s less 30), PY (python3 on the device,
# .venv/bin/python in a dry run), CORPUS (the folder e2e indexes: qmd_daemon, qmd_daemon/daemon in a
# dry run), TEXTS (device_check's and abort_check's texts: 256, 32 in a dry run).
# Writes OUT/log (all output), build.log, e2e.json, daemon-gpu.log, daemon-cpu.log, abort.json,
# check.json. Exit status: the number of failed steps.
set -o pipefail
cd "$(dirname "$0")/../.." || exit 99
DRY=${DRY_RUN:-}
[ "${1:-}" = "--dry-run" ] && DRY=1
OUT=${OUT:-/tmp/qmd-device-out}
CARRY=${CARRY:-.device-carry}
BUDGET=${BUDGET:-540}
if [ -n "$DRY" ]; then  # 2 cores embed ~7 chunks/s: qmd_daemon/daemon's 187 chunks, not the 1,461
  PY=${PY:-.venv/bin/python} TEXTS=${TEXTS:-32} CORPUS=${CORPUS:-qmd_daemon/daemon} EXPECT=cpu
else
  PY=${PY:-python3} TEXTS=${TEXTS:-256} CORPUS=${CORPUS:-qmd_daemon} EXPECT=gpu
fi
MODEL=$PWD/$CARRY/models/all-MiniLM-L6-v2-q8_0.gguf
LLAMA=llama_cpp_python-0.3.36
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONFAULTHANDLER=1 PY CARRY OUT LLAMA EXPECT
mkdir -p "$OUT"
T0=$(date +%s)
FAILED=()

left() { echo $((BUDGET - ($(date +%s) - T0))); }
cap() {  # the smaller of $1 seconds and what the budget has left, less a margin for the summary
  local l=$(($(left) - 10))
  [ "$1" -lt "$l" ] && echo "$1" || echo $((l > 1 ? l : 1))
}
step() {  # step NAME SECONDS CMD...: runs CMD under a timeout; a failure is noted, the run goes on
  local name=$1 limit t rc
  limit=$(cap "$2") && shift 2 && t=$(date +%s)
  echo && echo "=== $(date -u +%T) $name [+$((t - T0)) s, ${limit} s allowed, $(left) s left]"
  if declare -F "$1" >/dev/null; then  # a function of this script (exported): timeout runs programs
    timeout "$limit" bash -c '"$@"' "$name" "$@"
  else
    timeout "$limit" "$@"
  fi
  rc=$?
  echo "--- $name: exit $rc in $(($(date +%s) - t)) s"
  [ $rc -eq 0 ] || FAILED+=("$name (exit $rc)")
  return $rc
}

install_wheels() {
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$CARRY"/whl/*.whl
}

# the documented CUDA flags (docs/install.md "Device"), 208-261 s on the H200; no build isolation:
# the image's scikit-build-core, cmake and ninja (nothing can be fetched there)
build_llama() {
  rm -rf /tmp/llama-src /tmp/llama-wheel && mkdir -p /tmp/llama-src /tmp/llama-wheel
  tar xzf "$CARRY/$LLAMA-stripped.tar.gz" -C /tmp/llama-src || return 1
  CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF -DLLAVA_BUILD=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$PY" -m pip wheel --no-build-isolation --no-deps \
    -w /tmp/llama-wheel "/tmp/llama-src/$LLAMA" >"$OUT/build.log" 2>&1
  local rc=$?
  tail -15 "$OUT/build.log"
  [ $rc -eq 0 ] && "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
    /tmp/llama-wheel/llama_cpp_python-*.whl
}

import_check() {  # the build offloads and the package's imports resolve (the device's own numpy etc.)
  "$PY" -c '
import sys
from qmd_daemon.models.runtime import gpu_available, load_llama_first, select_device
load_llama_first()
import llama_cpp, sqlite_vec, tree_sitter, watchfiles, gguf, qmd_daemon.cli, qmd_daemon.daemon.server
auto = select_device("auto")
print("python", sys.version.split()[0], "llama_cpp", llama_cpp.__version__, "offload", gpu_available(),
      "auto ->", auto)
sys.exit(auto != sys.argv[1])' "$EXPECT"
}

main() {
  echo "qmd-daemon device run: $(git log -1 --format='%h %s' 2>/dev/null | cut -c1-100)"
  echo "dry run: ${DRY:-no}; python: $PY; budget $BUDGET s; out $OUT; $(nproc) cores"
  if [ ! -f "$MODEL" ]; then
    FAILED+=("no $MODEL: run bench/device/prepare.sh first and carry its folder")
    return
  fi
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total \
    --format=csv
  if [ -z "$DRY" ]; then
    step wheels 90 install_wheels || return
    step "build llama-cpp-python (CUDA)" 400 build_llama || return
    export PYTHONPATH=/tmp/site:$PWD
  else
    export PYTHONPATH=$PWD
    echo "dry run: no wheels, no CUDA build: $PY's own packages"
  fi
  step "import check (expects $EXPECT)" 60 import_check || return
  step "e2e: ai-search starts the daemon, $EXPECT then QMD_FORCE_CPU=1" 240 \
    "$PY" bench/device/e2e_daemon.py --corpus "$CORPUS" --model "$MODEL" --out "$OUT" --expect "$EXPECT"
  step "abort flag on a $EXPECT decode" 90 \
    "$PY" bench/device/abort_check.py --model "$MODEL" --texts "$TEXTS" --json "$OUT/abort.json"
  step "bench/device_check.py --auto" 180 env QMD_BENCHMARK_DEVICE_TIMEOUT=$(($(cap 180) / 2 - 5)) \
    "$PY" bench/device_check.py --embed-model "$MODEL" --texts "$TEXTS" --auto --json "$OUT/check.json"
}

summary() {
  echo && echo "=== done in $(($(date +%s) - T0)) s of $BUDGET; ${#FAILED[@]} step(s) failed"
  for f in "${FAILED[@]}"; do echo "FAILED: $f"; done
  return ${#FAILED[@]}
}

export -f install_wheels build_llama import_check
{ main; summary; } 2>&1 | tee "$OUT/log"
exit "${PIPESTATUS[0]}"
