"""CPU cost of tree-sitter chunking against the regex fallback, on real files of given languages.

    python bench/chunk_cost.py [--corpora DIR] [--languages kotlin,scala,...]

For every file of those languages under DIR (default the broad set's git corpora), chunks it with
the fallback and with `chunk_text` (tree-sitter where a grammar is installed), alternating per file
so that machine load hits both alike, and prints per-language CPU seconds and the ratio. Used to
check what a new grammar costs indexing (issue 11).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from qmd_daemon.file_types import language_of  # noqa: E402
from qmd_daemon.ingest.chunk_fallback import chunk_fallback  # noqa: E402
from qmd_daemon.ingest.chunking import chunk_text  # noqa: E402

GRAMMARS_OF_ISSUE_11 = "kotlin,scala,swift,elixir,haskell,lua,zig,shell"
MAX_BYTES = 1_000_000  # the indexer's default file-size limit


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", type=Path, default=Path("~/.cache/qmd-eval/git-corpora"))
    p.add_argument("--languages", default=GRAMMARS_OF_ISSUE_11)
    args = p.parse_args(argv)
    wanted = {s.strip() for s in args.languages.split(",") if s.strip()}
    corpora = args.corpora.expanduser()
    if not corpora.is_dir():
        print(f"chunk_cost.py: no corpora at {corpora}", file=sys.stderr)
        return 2
    fallback: Counter[str] = Counter()
    parsed: Counter[str] = Counter()
    files: Counter[str] = Counter()
    for path in sorted(corpora.rglob("*")):
        language = language_of(str(path))
        if language not in wanted or not path.is_file() or path.stat().st_size > MAX_BYTES:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        start = time.process_time()
        chunk_fallback(str(path), text, language)
        fallback[language] += time.process_time() - start
        start = time.process_time()
        chunk_text(str(path), text, language)
        parsed[language] += time.process_time() - start
        files[language] += 1
    if not files:
        print("chunk_cost.py: no files of those languages", file=sys.stderr)
        return 2
    rows = [(lang, files[lang], fallback[lang], parsed[lang]) for lang in sorted(files)]
    rows.append(("all", sum(files.values()), sum(fallback.values()), sum(parsed.values())))
    print(f"{'language':<10}{'files':>7}{'fallback s':>12}{'chunk_text s':>14}{'ratio':>8}")
    for lang, n, old, new in rows:
        print(f"{lang:<10}{n:>7}{old:>12.2f}{new:>14.2f}{new / max(old, 1e-9):>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
