"""What finding the collection of a folder inside a submodule costs, the step every `ai-search` made
there pays before its search (daemon/api.py `resolve_path` -> `_covers` -> `scan.is_submodule`):
with the index's gitlinks listed by `git ls-files --stage` on each call (the cache dropped before
each one: what every call cost before it was kept) and with them kept until the index changes.
An outer repository of --files tracked files (bench/ingest.py's tree) with one submodule; calls
interleaved in rounds, medians.

    python bench/submodule_covers.py [--files 20000] [--rounds 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.ingest import generate_tree  # noqa: E402
from qmd_daemon.daemon.api import resolve_path  # noqa: E402
from qmd_daemon.engine import Engine  # noqa: E402
from qmd_daemon.ingest import scan  # noqa: E402
from qmd_daemon.settings import Settings  # noqa: E402

GIT = ["git", "-c", "user.email=b@example.com", "-c", "user.name=b", "-c", "protocol.file.allow=always"]


def _repo(root: Path, files: int) -> Path:
    generate_tree(root, files)
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
        subprocess.run([*GIT, "-C", str(root), *step], check=True)
    return root


def _median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20000, help="tracked files of the outer repository")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qmd-covers-bench-") as tmp:
        outer = _repo(Path(tmp, "outer").resolve(), args.files)
        library = _repo(Path(tmp, "library").resolve(), 50)
        add = ["submodule", "add", "-q", str(library), "libs/library"]
        subprocess.run([*GIT, "-C", str(outer), *add], check=True)
        inside = outer / "libs" / "library"
        os.environ["QMD_DAEMON_HOME"] = str(Path(tmp, "home"))
        engine = Engine(Settings.from_env())
        try:
            name = engine.add_collection(outer).name
            listed, kept = [], []
            for _ in range(args.rounds):
                scan._GITLINKS.clear()
                started = time.perf_counter()
                found, _ = resolve_path(engine, inside, create=False)
                listed.append(time.perf_counter() - started)
                assert found is not None and found.name == name
                started = time.perf_counter()
                found, _ = resolve_path(engine, inside, create=False)
                kept.append(time.perf_counter() - started)
                assert found is not None and found.name == name
        finally:
            engine.close()
    before, after = _median_ms(listed), _median_ms(kept)
    print(f"outer repository: {args.files} tracked files + 1 submodule; {args.rounds} rounds (medians)")
    print(f"collection of a folder in the submodule, gitlinks listed each call (before) {before:7.2f} ms")
    print(f"collection of a folder in the submodule, gitlinks kept (after)            {after:7.2f} ms")
    print(f"ratio before/after {before / after:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
