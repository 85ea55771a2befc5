"""Files found by the stems of their names (store/file_stems.py) through the real indexer and a
real SQLite index: any case, `_` a plain character, a removed file gone, and an index made before
the table migrated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qmd_daemon.store.connection import sqlite
from qmd_daemon.store.file_stems import path_stems
from qmd_daemon.store.index_store import IndexStore
from tests.conftest import indexed

FILES = {
    "pkg/__init__.py": "VERSION = 1\n",
    "pkg/abinitcd.py": "def other():\n    return 2\n",
    "src/Widget.test.js": "test('widget', () => {})\n",
    "lib.d/helpers.py": "def helper():\n    return 3\n",
    "README.md": "# read me\n",
}


def _named(store: Any, stems: list[str], collection_ids: list[int]) -> list[str]:
    found = store.chunks_of_files_named(stems, collection_ids)
    return sorted(row.path for row in store.chunks_by_ids(found).values())


def test_path_stems_are_each_segments_text_before_each_dot() -> None:
    assert path_stems("src/Foo.test.js") == {"foo", "foo.test"}
    assert path_stems("lib.d/x.py") == {"lib", "x"}
    assert path_stems("Makefile") == set()
    assert path_stems("a/.gitignore") == set()


def test_files_are_found_by_stem_any_case_underscore_plain(engine: Any, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "p", FILES)
    ids = engine.collection_ids([name])
    store = engine.store
    assert _named(store, ["__init__"], ids) == ["pkg/__init__.py"], "LIKE's `_` matched abinitcd.py too"
    assert _named(store, ["WIDGET.TEST", "readme"], ids) == ["README.md", "src/Widget.test.js"]
    assert _named(store, ["widget", "lib"], ids) == ["lib.d/helpers.py", "src/Widget.test.js"]
    assert _named(store, ["helpers.py", "nothing"], ids) == []
    (tmp_path / "p" / "pkg" / "__init__.py").unlink()
    engine.update([name], progress=False)
    assert _named(store, ["__init__"], ids) == []
    assert store.conn.execute("SELECT count(*) FROM file_stems WHERE stem = '__init__'").fetchone()[0] == 0


def test_migration_fills_the_stems_of_an_index_made_before_the_table(engine: Any, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "p", FILES)
    ids = engine.collection_ids([name])
    path = engine.settings.index_path
    engine.close()
    conn = sqlite.connect(str(path))
    conn.execute("DROP TABLE file_stems")
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")  # before file_stems
    conn.commit()
    conn.close()
    store = IndexStore(path)
    try:
        assert _named(store, ["widget", "__init__"], ids) == ["pkg/__init__.py", "src/Widget.test.js"]
    finally:
        store.close()
