"""term_stats (each token's chunks per collection, kept at write time) against FTS5's own index, read
through fts5vocab: after a build, edits, deletions, a removed collection, and the migration of an
index made before the table. Real files (copies of this repository's sources and docs), real
SQLite and FTS5."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from qmd_daemon.store.connection import sqlite
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.lexical_query import Word

REPO = Path(__file__).resolve().parents[2]


def _fts5_truth(store: IndexStore) -> Counter[tuple[str, int]]:
    """(token, collection id) -> chunks holding it, as FTS5 itself indexed them."""
    conn = store.conn
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, chunks_fts, instance)")
    owners = "SELECT c.id, f.collection_id FROM chunks c JOIN files f ON f.id = c.file_id"
    collection_of = dict(conn.execute(owners))
    pairs = {(term, doc) for term, doc in conn.execute("SELECT term, doc FROM temp.vocab")}
    return Counter((term, int(collection_of[doc])) for term, doc in pairs)


def _kept(store: IndexStore) -> Counter[tuple[str, int]]:
    rows = store.conn.execute("SELECT token, collection_id, df FROM term_stats")
    return Counter({(token, int(cid)): int(df) for token, cid, df in rows})


def _trees(tmp_path: Path) -> tuple[Path, Path]:
    code = tmp_path / "code"
    shutil.copytree(REPO / "qmd_daemon" / "search", code / "search")
    shutil.copytree(REPO / "qmd_daemon" / "store", code / "store", ignore=shutil.ignore_patterns("postgres"))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("scale.md", "usage.md", "architecture.md"):
        shutil.copy(REPO / "docs" / name, docs / name)
    return code, docs


def _engine_store(engine: Any) -> IndexStore:
    store = engine.store
    assert isinstance(store, IndexStore)
    return store


def test_counts_follow_the_fts_index_through_edits_and_removals(engine: Any, tmp_path: Path) -> None:
    code, docs = _trees(tmp_path)
    names = [engine.add_collection(code).name, engine.add_collection(docs).name]
    engine.update(names, progress=False)
    store = _engine_store(engine)
    truth = _fts5_truth(store)
    assert len(truth) > 2000
    assert _kept(store) == truth

    (code / "search" / "lexical.py").write_text("def replaced_whole_module():\n    return 'zyxwvut'\n")
    (code / "store" / "schema.py").unlink()
    (code / "search" / "new_module.py").write_text("class FreshlyAddedThing:\n    pass\n")
    (docs / "usage.md").write_text((docs / "usage.md").read_text() + "\n\nA paragraph added at the end.\n")
    engine.update(names, progress=False)
    truth = _fts5_truth(store)
    assert ("zyxwvut", store.collection_id(names[0])) in truth
    assert _kept(store) == truth

    engine.remove_collection(names[1])
    assert _kept(store) == _fts5_truth(store)


def test_fts_count_of_a_word_equals_its_match_count(engine: Any, tmp_path: Path) -> None:
    code, docs = _trees(tmp_path)
    names = [engine.add_collection(code).name, engine.add_collection(docs).name]
    engine.update(names, progress=False)
    store = _engine_store(engine)
    ids = [store.collection_id(n) for n in names]
    words = ["search", "Running", "collections", "FTS5", "__init__", "set_output", "qmdcol1", "absent", "é"]
    for scope in ([ids[0]], [ids[1]], ids):
        for word in words:
            match = f'collection : ({" OR ".join(f"qmdcol{i}" for i in scope)}) AND "{word.lower()}"'
            counted = store.conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,))
            assert store.fts_count(Word(word), scope) == counted.fetchone()[0], (word, scope)


def test_migration_counts_an_index_made_before_the_table(engine: Any, tmp_path: Path) -> None:
    code, docs = _trees(tmp_path)
    names = [engine.add_collection(code).name, engine.add_collection(docs).name]
    engine.update(names, progress=False)
    path = _engine_store(engine).path
    engine.close()
    conn = sqlite.connect(str(path))
    for table in ("term_stats", "file_stems"):  # what schemas 4 and 5 add
        conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()
    for _ in range(2):  # the second time the steps run over their own tables: recounted, not doubled
        conn = sqlite.connect(str(path))
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
        conn.commit()
        conn.close()
        store = IndexStore(path)
        try:
            assert _kept(store) == _fts5_truth(store)
        finally:
            store.close()


def test_rows_written_and_replaced_in_one_transaction_are_counted_once(tmp_path: Path) -> None:
    # a row still held back (not yet in chunks_fts) when its chunk is rewritten or its file
    # deleted was never counted; only what the commit leaves in FTS5 is
    from qmd_daemon.text.chunk_model import Chunk, Definition

    store = IndexStore(tmp_path / "i.sqlite")

    def write(cid: int, path: str, version: int, text: str) -> None:
        chunk = Chunk(1, 2, text, [Definition(text.split()[1].split("(")[0], "function", 1)])
        store.write_file(cid, path, size=version, mtime_ns=version, content_hash=f"{path}{version}",
                         language="python", kind="code", line_count=2, chunks=[chunk])

    with store.transaction():
        first = store.ensure_collection("first", tmp_path / "a")
        second = store.ensure_collection("second", tmp_path / "b")
        write(first, "m.py", 1, "def held_then_replaced():\n    return 'qwertyuiop'")
        write(second, "n.py", 1, "def other_collection():\n    return 'qwertyuiop'")
        write(first, "m.py", 2, "def replacement_kept():\n    return 'asdfghjkl'")
        write(first, "gone.py", 1, "def written_then_deleted():\n    return 'zxcvbnm'")
        gone = store.file_states(first)["gone.py"].id
        store.delete_files([gone])
    kept = _kept(store)
    assert kept == _fts5_truth(store)
    assert ("qwertyuiop", first) not in kept and kept[("qwertyuiop", second)] == 1
    assert kept[("asdfghjkl", first)] == 1 and ("zxcvbnm", first) not in kept
