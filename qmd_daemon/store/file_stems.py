"""Files by the stems of their names, so that a stack frame's or a symbol's file is found by an
index lookup: the `LIKE '%/stem.%'` it replaces read every path of the searched collections (up to
51 ms a bug report at 503k chunks, 43k files).

A stem is what comes before a dot in one segment of the path, lowercased: `src/foo.test.js` has
`foo` and `foo.test` (`lib.d/x.py`: `lib`, `x`), so a frame's `foo.test` finds it as `%/foo.test.%`
did. Unlike LIKE, `_` in a stem is a plain character (`__init__` matched `a_init_b.py` too).
"""

from __future__ import annotations

from typing import Any

FILE_STEMS_TABLE = [
    """CREATE TABLE IF NOT EXISTS file_stems (
        stem TEXT NOT NULL,
        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        PRIMARY KEY (stem, file_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS file_stems_by_file ON file_stems(file_id)",  # the cascade's lookup
]


def path_stems(path: str) -> set[str]:
    """Every stem of PATH: each segment's text before each of its dots, lowercased."""
    stems: set[str] = set()
    for segment in path.lower().split("/"):
        at = segment.find(".")
        while at != -1:
            stems.add(segment[:at])
            at = segment.find(".", at + 1)
    stems.discard("")  # `.gitignore`: no stem
    return stems


def add_file(conn: Any, file_id: int, path: str) -> None:
    rows = [(stem, file_id) for stem in path_stems(path)]
    conn.executemany("INSERT OR IGNORE INTO file_stems (stem, file_id) VALUES (?, ?)", rows)


def fill(conn: Any) -> None:
    """The stems of every file already indexed (the migration of an index made before the table)."""
    for file_id, path in conn.execute("SELECT id, path FROM files").fetchall():
        add_file(conn, int(file_id), path)
