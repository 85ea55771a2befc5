"""Files whose tree-sitter parse root is ERROR, and what each way of chunking them defines.

Why: `chunk_code._error_share` counts only the top-level ERROR children, so a file whose root
itself is ERROR kept its partial parse. For some grammars that partial parse is a wreck (Groovy:
one chunk, two misnamed methods), for others it holds most definitions (C headers, PowerShell),
and the regex fallback would lose them. `_ERROR_ROOT_UNPARSED` names the languages sent to the
fallback (Groovy, Kotlin); this prints, per file and per language, the definitions of both ways,
to decide another language by figures.

    python bench/error_roots.py [FOLDER ...]   # default: the eval corpora under ~/.cache/qmd-eval
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qmd_daemon.file_types import language_of_text  # noqa: E402
from qmd_daemon.ingest import chunk_code  # noqa: E402
from qmd_daemon.ingest.chunking import chunk_text  # noqa: E402

EVAL = Path.home() / ".cache" / "qmd-eval"
DEFAULT_FOLDERS = [EVAL / "git-corpora", EVAL / "corpora", EVAL / "heldout-corpora"]
MAX_BYTES = 1_000_000


def error_root_files(folders: list[Path]) -> list[tuple[Path, str, str]]:
    """(file, its path under its folder, language) of every file that parses to an ERROR root."""
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or path.stat().st_size > MAX_BYTES:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            language = language_of_text(str(path), text)
            parser = chunk_code._parser(language) if language in chunk_code.SUPPORTED_LANGUAGES else None
            if parser is not None and parser.parse(text.encode()).root_node.type == "ERROR":
                found.append((path, str(path.relative_to(folder)), language or ""))
    return found


def definitions(rel: str, text: str, language: str, fallback: bool) -> set[str]:
    """The names chunk_text defines for the file, its language sent to the fallback or not."""
    saved = chunk_code._ERROR_ROOT_UNPARSED
    chunk_code._ERROR_ROOT_UNPARSED = saved | {language} if fallback else saved - {language}
    try:
        return {d.name for c in chunk_text(rel, text) for d in c.definitions}
    finally:
        chunk_code._ERROR_ROOT_UNPARSED = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, default=DEFAULT_FOLDERS)
    args = parser.parse_args()
    totals: dict[str, Counter[str]] = {}
    for path, rel, language in error_root_files([f for f in args.folders if f.is_dir()]):
        text = path.read_text(encoding="utf-8")
        partial, fallback = definitions(rel, text, language, False), definitions(rel, text, language, True)
        counts = totals.setdefault(language, Counter())
        counts.update(files=1, partial=len(partial), fallback=len(fallback))
        sent = "fallback" if language in chunk_code._ERROR_ROOT_UNPARSED else "partial"
        print(f"{language:11} {len(partial):5} -> {len(fallback):5}  ({sent} now)  {rel}")
        print(f"{'':11} lost {sorted(partial - fallback)[:5]}  gained {sorted(fallback - partial)[:5]}")
    print("\nlanguage     files  definitions: partial parse  fallback")
    for language, counts in sorted(totals.items()):
        print(f"{language:11} {counts['files']:6} {counts['partial']:24} {counts['fallback']:9}")


if __name__ == "__main__":
    main()
