import os
from pathlib import Path

from qmd_daemon.engine import Engine
from tests.conftest import SAMPLE_GO, SAMPLE_MD, SAMPLE_PY, write_tree


def _tree(root: Path) -> Path:
    return write_tree(root, {"client.py": SAMPLE_PY, "pool/conn.go": SAMPLE_GO, "README.md": SAMPLE_MD})


def test_first_update_indexes_everything_then_nothing_changes(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    first = engine.update([name])[0]
    assert (first.added, first.changed, first.removed) == (3, 0, 0)
    assert first.chunks_added >= 3
    second = engine.update([name])[0]
    assert (second.added, second.changed, second.removed, second.unchanged) == (0, 0, 0, 3)
    assert second.chunks_added == 0


def test_unchanged_size_and_mtime_means_file_is_not_read(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    os.chmod(root / "client.py", 0)  # unreadable: reading it now would be counted as a skip
    try:
        report = engine.update([name])[0]
    finally:
        os.chmod(root / "client.py", 0o644)
    assert report.unchanged == 3 and "unreadable" not in report.skipped


def test_touched_file_with_same_bytes_is_not_rechunked(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    os.utime(root / "client.py", ns=(1, 1))
    report = engine.update([name])[0]
    assert (report.changed, report.chunks_added, report.unchanged) == (0, 0, 3)


def test_editing_one_function_replaces_only_its_chunks(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    edited = SAMPLE_PY.replace('return dict(part.split("=", 1)', 'return dict(piece.split("=", 1)')
    (root / "client.py").write_text(edited)
    report = engine.update([name])[0]
    assert report.changed == 1
    assert report.chunks_added == report.chunks_removed == 1
    hits = engine.search("piece split cookie", [name])
    assert hits and hits[0].path == "client.py"


def test_deleted_file_disappears(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    (root / "pool/conn.go").unlink()
    assert engine.update([name])[0].removed == 1
    assert engine.search("TCPConnector", [name]) == []


def test_bad_files_are_counted_not_fatal(engine: Engine, tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {
            "ok.py": "def fine():\n    return 'fine'\n",
            "latin1.py": b"def caf\xe9():\n    return '\xff\xfe broken utf8 marker_word'\n",
            "nul.py": b"binary\x00\x01\x02 stuff",
            "huge.md": "word " * (50 * 1024 * 1024 // 5),
        },
    )
    name = engine.add_collection(root).name
    report = engine.update([name])[0]
    assert report.skipped == {"binary": 1, "too_large": 1}
    assert report.files == 2
    hits = engine.search("marker_word", [name])
    assert hits and hits[0].path == "latin1.py" and "\ufffd" in engine.read_indexed_text(name, "latin1.py")


def test_doc_code_links_both_ways(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    doc_hits = [h for h in engine.search("Sessions guide cookies", [name]) if h.path == "README.md"]
    assert doc_hits and "client.py" in doc_hits[0].related
    code_hits = [h for h in engine.search("parse_cookie_header", [name]) if h.path == "client.py"]
    assert code_hits and "README.md" in code_hits[0].related


def test_new_chunker_version_rechunks_every_file(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    collection_id = engine.store.collection_id(name)
    with engine.store.transaction():
        engine.store.mark_updated(collection_id, "an older chunker")
    report = engine.update([name])[0]
    assert report.changed == 3 and report.unchanged == 0
    assert engine.update([name])[0].unchanged == 3


def test_empty_file_is_indexed_with_empty_text(engine: Engine, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/a.py": "x = 1\n"})
    name = engine.add_collection(root).name
    engine.update([name])
    assert "pkg/__init__.py" in engine.indexed_paths(name)
    assert engine.read_indexed_text(name, "pkg/__init__.py") == ""
