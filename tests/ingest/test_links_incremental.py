"""Doc-code links after an update equal a full re-link, while only the reachable doc chunks are
re-linked. The tree is a copy of this project's own sources and docs: real prose that cites real
paths and names."""

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.ingest.links import find_links

REPO = Path(__file__).resolve().parents[2]


def _project_copy(root: Path) -> Path:
    shutil.copytree(REPO / "qmd_daemon", root / "qmd_daemon", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "docs", root / "docs")
    shutil.copy(REPO / "README.md", root / "README.md")
    return root


def _full_relink(engine: Engine, collection_id: int) -> set[tuple[int, int, str]]:
    store = engine.store
    chunks = store.doc_chunks(collection_id)
    return set(find_links(chunks, store.code_files(collection_id), store.definition_files(collection_id)))


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _doc_cites_names(root: Path) -> None:
    _append(root / "docs" / "install.md", "\n\nSee `ModelSet` and ingest/scan.py.\n")


def _code_starts_defining_a_cited_name(root: Path) -> None:
    _append(root / "qmd_daemon" / "config.py", "\n\ndef quick_check() -> None:\n    pass\n")


def _code_stops_defining_a_cited_name(root: Path) -> None:
    watcher = root / "qmd_daemon" / "daemon" / "watcher.py"
    watcher.write_text(watcher.read_text(encoding="utf-8").replace("RootWatcher", "RootFollower"))


def _name_defined_by_too_many_files(root: Path) -> None:
    for n in range(3):
        (root / "qmd_daemon" / f"extra_{n}.py").write_text("def read_inside() -> None:\n    pass\n")


def _cited_file_renamed(root: Path) -> None:
    (root / "qmd_daemon" / "errors.py").rename(root / "qmd_daemon" / "failures.py")


def _cited_file_deleted(root: Path) -> None:
    (root / "qmd_daemon" / "locks.py").unlink()


def _cited_file_name_made_ambiguous(root: Path) -> None:
    (root / "qmd_daemon" / "extra").mkdir()
    (root / "qmd_daemon" / "extra" / "config.py").write_text("VALUE = 1\n")


def _ambiguous_file_name_made_unique(root: Path) -> None:
    (root / "qmd_daemon" / "extra" / "config.py").unlink()


def _nothing(root: Path) -> None:
    pass


def _indexed_copy(engine: Engine, root: Path, prepare: Callable[[Path], None]) -> tuple[Path, str, int]:
    """The project's copy at ROOT, PREPAREd, added and updated: (root, collection name, its id)."""
    _project_copy(root)
    prepare(root)
    name = engine.add_collection(root).name
    engine.update([name])
    collection_id = engine.store.collection_id(name)
    assert collection_id is not None
    return root, name, collection_id


@pytest.mark.parametrize(
    ("prepare", "edit"),
    [
        (_nothing, _doc_cites_names),
        (_nothing, _code_starts_defining_a_cited_name),
        (_nothing, _code_stops_defining_a_cited_name),
        (_nothing, _name_defined_by_too_many_files),
        (_nothing, _cited_file_renamed),
        (_nothing, _cited_file_deleted),
        (_nothing, _cited_file_name_made_ambiguous),
        (_cited_file_name_made_ambiguous, _ambiguous_file_name_made_unique),
    ],
)
def test_incremental_links_equal_a_full_relink(
    engine: Engine, tmp_path: Path, prepare: Callable[[Path], None], edit: Callable[[Path], None]
) -> None:
    root, name, collection_id = _indexed_copy(engine, tmp_path / "proj", prepare)
    before = engine.store.links_of(collection_id)
    assert before == _full_relink(engine, collection_id) and len(before) > 50
    doc_chunks = len(engine.store.doc_chunks(collection_id))

    edit(root)
    report = engine.update([name])[0]
    after = engine.store.links_of(collection_id)
    assert after == _full_relink(engine, collection_id)
    assert after != before  # the edit reached some doc's links
    assert report.relinked < doc_chunks


def test_a_body_only_code_edit_relinks_nothing(engine: Engine, tmp_path: Path) -> None:
    root, name, collection_id = _indexed_copy(engine, tmp_path / "proj", _nothing)
    before = engine.store.links_of(collection_id)
    _append(root / "qmd_daemon" / "engine.py", "\n# a comment: the defined names stay the same\n")
    report = engine.update([name])[0]
    assert report.changed == 1 and report.relinked == 0
    assert engine.store.links_of(collection_id) == before == _full_relink(engine, collection_id)
