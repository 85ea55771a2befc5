#!/bin/sh
# qmd-daemon setup for Claude Code and Codex (Linux, macOS). A thin shell over the one Python
# implementation, qmd_daemon/setup (also behind install.ps1); see docs/install.md.
#
#   ./install.sh                               ask: Enable local QMD search models? [y/N/a]
#   ./install.sh --semantic-retrieval yes|no|auto [--dry-run] [--profile qwen3|small] ...
#   ./install.sh --help                        every option
#
# QMD_PYTHON=/path/to/python3 picks the interpreter (default: the newest python3.x >= 3.11 on PATH).
set -u
here=$(cd "$(dirname "$0")" && pwd)

pick_python() {
  for candidate in ${QMD_PYTHON:-} python3.13 python3.12 python3.11 python3 python; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! python=$(pick_python); then
  selection=""
  prev=""
  for arg in "$@"; do
    case "$prev" in --semantic-retrieval) selection=$arg ;; esac
    case "$arg" in --semantic-retrieval=*) selection=${arg#*=} ;; esac
    prev=$arg
  done
  case "$selection" in
    y|yes) echo "install: error: Python 3.11 or newer is required (set QMD_PYTHON); nothing was changed" >&2
           exit 2 ;;
    a|auto) echo "Auto: unsuitable: Python 3.11 or newer is required; continuing as No (nothing to install)"
            exit 0 ;;
    *) echo "install: Python 3.11 or newer not found; nothing to do"; exit 0 ;;
  esac
fi

# The setup's own code runs from this checkout with the standard library only; the package and
# its dependencies go into the environment it creates (or the one given with --python-env).
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" QMD_SETUP_BASE_PYTHON="${QMD_SETUP_BASE_PYTHON:-$(command -v "$python")}" \
  exec "$python" -m qmd_daemon.setup "$@"
