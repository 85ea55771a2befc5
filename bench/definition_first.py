"""Do bare identifiers find their definition first (README's promise)? Names of a bench home's
definitions, each defined once in its collection as spelled, 4+ characters, up to --per-lang a
language from a seeded shuffle: `--probe long` (the default), the long definitions (one cut into
windows a file); `--probe lower`, definitions of any length whose name is a plain lower-case word
(no capital, no `_`: `linprm`, `launch`). Each bare name is searched lexically and the first hit
checked: is it the chunk holding the definition's line, and does the hit's `line` start at it (or
at its decorators / return-type line, up to 3 lines above)? Every miss is printed with its
language, the kind of definition, the first hit and its boosts.

Read-only on the index, but run it on a copy of a bench home all the same (docs/ranking.md,
"Bare lower-case identifiers"):

    python bench/definition_first.py --home ~/.cache/qmd-eval/home-COPY [--probe lower] [--languages c,zig]
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

HEAD_SLACK = 3  # lines above the definition's that still count as its head


@dataclass(frozen=True)
class Probe:
    collection: str
    path: str
    language: str
    name: str
    kind: str
    line: int


def probes(db: sqlite3.Connection, per_lang: int, languages: set[str] | None, seed: int) -> list[Probe]:
    """One long definition a code file, as bench/retrieval.py's homes index them."""
    from qmd_daemon.search.scoring import definition_windows

    cols = dict(db.execute("SELECT id, name FROM collections"))
    files = db.execute(
        "SELECT id, collection_id, path, language FROM files WHERE kind = 'code' ORDER BY id").fetchall()
    random.Random(seed).shuffle(files)
    seen: collections.Counter[str] = collections.Counter()
    out: list[Probe] = []
    for file_id, col_id, path, lang in files:
        if (languages and lang not in languages) or seen[lang] >= per_lang:
            continue
        rows = db.execute("SELECT id, signature FROM chunks WHERE file_id = ? ORDER BY start_line",
                          (file_id,)).fetchall()
        signatures = dict(rows)
        for run in {w[0]: w for w in definition_windows({file_id: rows}).values()}.values():
            continued = signatures[run[1]].split("\n")[0]
            defs = db.execute("SELECT name, kind, line FROM definitions WHERE chunk_id = ?",
                              (run[0],)).fetchall()
            match = [(n, k, ln) for n, k, ln in defs if n.isidentifier() and n in continued]
            if not match:
                continue
            name, kind, line = match[-1]
            (defined,) = db.execute(
                """SELECT count(*) FROM definitions d JOIN chunks c ON c.id = d.chunk_id
                   JOIN files f ON f.id = c.file_id WHERE d.name = ? AND f.collection_id = ?""",
                (name, col_id)).fetchone()
            if defined != 1 or len(name) < 4:
                continue
            seen[lang] += 1
            out.append(Probe(cols[col_id], path, lang, name, kind, line))
            break
    return out


def lower_case_probes(
    db: sqlite3.Connection, per_lang: int, languages: set[str] | None, seed: int
) -> list[Probe]:
    """Definitions of any length named by a plain lower-case word, as a code file defines them
    (not a heading or a data file's key): the names that do not look like identifiers."""
    cols = dict(db.execute("SELECT id, name FROM collections"))
    rows = db.execute(
        """SELECT d.name, d.kind, d.line, f.path, f.language, f.collection_id FROM definitions d
           JOIN chunks c ON c.id = d.chunk_id JOIN files f ON f.id = c.file_id
           WHERE f.kind = 'code' AND d.kind NOT IN ('heading', 'key')
           ORDER BY d.chunk_id, d.line""").fetchall()
    defined = collections.Counter((name, col_id) for name, *_, col_id in rows)
    plain = [r for r in rows if defined[(r[0], r[5])] == 1 and len(r[0]) >= 4 and r[0].isidentifier()
             and r[0].islower() and "_" not in r[0]]
    random.Random(seed).shuffle(plain)
    seen: collections.Counter[str] = collections.Counter()
    out: list[Probe] = []
    for name, kind, line, path, lang, col_id in plain:
        if (languages and lang not in languages) or seen[lang] >= per_lang:
            continue
        seen[lang] += 1
        out.append(Probe(cols[col_id], path, lang, name, kind, line))
    return out


def check(engine: Any, probe: Probe) -> tuple[bool, bool, bool, Any]:
    """(first hit is the definition's chunk, its line is the definition's, at or just above it, hit)."""
    from qmd_daemon.search.pipeline import SearchOptions

    hits = engine.search(probe.name, [probe.collection], limit=3,
                         options=SearchOptions(vectors=False, explain=True))
    if not hits:
        return False, False, False, None
    hit = hits[0]
    start, end = hit.explain["chunk_lines"]
    chunk = hit.path == probe.path and start <= probe.line <= end
    near = chunk and probe.line - HEAD_SLACK <= hit.line <= probe.line
    return chunk, chunk and hit.line == probe.line, near, hit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True, help="a bench home (bench/retrieval.py --home)")
    ap.add_argument("--languages", default="", help="comma-separated; default: every language")
    ap.add_argument("--per-lang", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--probe", choices=("long", "lower"), default="long")
    args = ap.parse_args(argv)
    index = args.home / "cache" / "index.sqlite"
    if not index.is_file():
        print(f"no index at {index}", file=sys.stderr)
        return 2
    os.environ["QMD_DAEMON_HOME"] = str(args.home)
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    languages = {x for x in args.languages.split(",") if x} or None
    engine = Engine(Settings.from_env())
    stats: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    misses: list[str] = []
    pick = probes if args.probe == "long" else lower_case_probes
    for probe in pick(db, args.per_lang, languages, args.seed):
        chunk, at, near, hit = check(engine, probe)
        s = stats[probe.language]
        s.update(n=1, chunk=chunk, at=at, near=near)
        if not near:
            first = "no hit" if hit is None else f"{hit.path}:{hit.line} {hit.explain['chunk_lines']} " \
                f"boosts {sorted(hit.explain['boosts'])}"
            misses.append(f"  {probe.language} {probe.kind} {probe.name} ({probe.collection} {probe.path}:"
                          f"{probe.line}) -> {first}")
    engine.close()
    total: collections.Counter[str] = collections.Counter()
    print(f"{'language':11} {'n':>4} {'chunk first':>12} {'line at def':>12} {'at/just above':>14}")
    for lang, s in sorted(stats.items()):
        total.update(s)
        print(f"{lang:11} {s['n']:4} {s['chunk']:12} {s['at']:12} {s['near']:14}")
    print(f"{'all':11} {total['n']:4} {total['chunk']:12} {total['at']:12} {total['near']:14}")
    print(f"misses ({len(misses)}):", *misses, sep="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
