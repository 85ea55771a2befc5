"""A walk takes a folder's files from the listing an earlier walk recorded when the folder's mtime
is unchanged (ingest/listings.py), and never misses a change for it: an edit in place (no folder
mtime moves), a new or removed file, a folder changed in the timestamp tick of its listing, an
edited .gitignore above a recorded folder, a changed mask, a damaged cache file, a folder mtime put
back (`rsync -a`, `tar x`), a folder swapped for another with the same mtime. Real trees, real
updates; `os.scandir` is only counted (the real one runs) to show when the records are used."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.ingest import scan as scan_module
from qmd_daemon.ingest.listings import listings_file
from tests.conftest import write_tree

HOUR_NS = 3600 * 10**9


def _age_folders(root: Path) -> None:
    """Every folder last changed an hour ago: past the racy window, so its listing is recorded."""
    then = time.time_ns() - HOUR_NS
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.utime(folder, ns=(then, then))


@pytest.fixture
def listed_folders(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The folders of the trees under test that a walk lists (the real os.scandir runs; this only
    counts; the index's own folder, listed as the store opens, is left out)."""
    seen: list[str] = []
    real = os.scandir

    def counting(path: str) -> object:
        if "/proj" in str(path):
            seen.append(str(path))
        return real(path)

    monkeypatch.setattr(scan_module.os, "scandir", counting)
    yield seen


def _tree(root: Path) -> Path:
    write_tree(
        root,
        {
            "a.py": "def alpha():\n    return 1\n",
            "pkg/b.py": "def beta():\n    return 2\n",
            "pkg/deep/c.py": "def gamma():\n    return 3\n",
            "docs/guide.md": "# Guide\n\nUse alpha.\n",
        },
    )
    _age_folders(root)
    return root


def _indexed(engine: Engine, root: Path) -> str:
    name = engine.add_collection(root).name
    first = engine.update([name])[0]
    assert first.added == 4
    return name


def test_unchanged_folders_are_not_listed_again(
    engine: Engine, tmp_path: Path, listed_folders: list[str]
) -> None:
    name = engine.add_collection(_tree(tmp_path / "proj")).name
    listed_folders.clear()
    assert engine.update([name])[0].added == 4
    assert len(listed_folders) == 4  # root, docs, pkg, pkg/deep
    listed_folders.clear()
    report = engine.update([name])[0]
    assert (report.unchanged, report.added, report.removed) == (4, 0, 0)
    assert listed_folders == []
    assert listings_file(engine.settings.cache_dir, name).stat().st_mode & 0o777 == 0o600


def test_an_edit_in_place_is_found_though_no_folder_mtime_moved(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = _indexed(engine, root)
    target = root / "pkg" / "deep" / "c.py"
    folder_before = target.parent.stat().st_mtime_ns
    before = target.stat().st_mtime_ns
    # same size, an mtime in the same second: only the nanoseconds differ
    target.write_text("def delta():\n    return 3\n")
    os.utime(target, ns=(before + 1000, before + 1000))
    assert target.parent.stat().st_mtime_ns == folder_before
    report = engine.update([name])[0]
    assert report.changed == 1
    assert [h.path for h in engine.search("delta", [name])] == ["pkg/deep/c.py"]


def test_new_and_removed_files_are_found(engine: Engine, tmp_path: Path, listed_folders: list[str]) -> None:
    root = _tree(tmp_path / "proj")
    name = _indexed(engine, root)
    (root / "pkg" / "deep" / "c.py").unlink()
    write_tree(root, {"pkg/new.py": "def epsilon():\n    return 5\n"})
    listed_folders.clear()
    report = engine.update([name])[0]
    assert (report.added, report.removed, report.unchanged) == (1, 1, 3)
    assert sorted(Path(p).name for p in listed_folders) == ["deep", "pkg"]  # only the changed ones


def test_a_folder_changed_in_the_tick_of_its_listing_is_listed_again(engine: Engine, tmp_path: Path) -> None:
    """A file created just after the listing, in the same timestamp tick, leaves the folder's mtime
    as the listing saw it: a folder changed that recently is never recorded."""
    root = _tree(tmp_path / "proj")
    write_tree(root, {"pkg/recent.py": "x = 1\n"})  # pkg's mtime: now
    name = engine.add_collection(root).name
    engine.update([name])
    stamp = (root / "pkg").stat().st_mtime_ns
    write_tree(root, {"pkg/same_tick.py": "def zeta():\n    return 6\n"})
    os.utime(root / "pkg", ns=(stamp, stamp))  # as if in the tick of the listing
    report = engine.update([name])[0]
    assert report.added == 1
    assert [h.path for h in engine.search("zeta", [name])] == ["pkg/same_tick.py"]


def test_a_gitignore_edited_above_a_recorded_folder_applies(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    write_tree(root, {".gitignore": "nothing/\n"})
    _age_folders(root)
    name = _indexed(engine, root)
    ignore = root / ".gitignore"
    stat = ignore.stat()
    folders_before = {p: p.stat().st_mtime_ns for p in (root, root / "pkg", root / "pkg" / "deep")}
    ignore.write_text("pkg/deep\n")  # same size, same mtime, no folder mtime moves
    os.utime(ignore, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert {p: p.stat().st_mtime_ns for p in folders_before} == folders_before
    report = engine.update([name])[0]
    assert report.removed == 1
    assert engine.search("gamma", [name]) == []


def test_a_new_mask_walks_again(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = _indexed(engine, root)
    engine.add_collection(root, mask="**/*.md")
    report = engine.update([name])[0]
    assert (report.removed, report.unchanged) == (3, 1)


def test_a_damaged_cache_file_walks_again(engine: Engine, tmp_path: Path) -> None:
    name = _indexed(engine, _tree(tmp_path / "proj"))
    cache = listings_file(engine.settings.cache_dir, name)
    cache.write_text('{"key": 1, "folders": [')
    report = engine.update([name])[0]
    assert (report.unchanged, report.removed) == (4, 0)
    assert cache.read_text().startswith('{"key":')


def test_removing_the_collection_deletes_its_listings(engine: Engine, tmp_path: Path) -> None:
    name = _indexed(engine, _tree(tmp_path / "proj"))
    write_tree(tmp_path / "proj", {"gen.go": "// Code generated by hand. DO NOT EDIT.\n"})
    engine.update([name])
    caches = [listings_file(engine.settings.cache_dir, name, kind) for kind in ("folders", "skipped")]
    assert all(cache.is_file() for cache in caches)
    engine.remove_collection(name)
    assert not any(cache.exists() for cache in caches)


def test_a_folder_mtime_put_back_does_not_hide_a_new_file(engine: Engine, tmp_path: Path) -> None:
    """`rsync -a`, `cp -a` and `tar x` put a folder's mtime back after writing into it: its ctime
    (which no program can set) still moves."""
    root = _tree(tmp_path / "proj")
    name = _indexed(engine, root)
    folder = root / "pkg" / "deep"
    before = folder.stat()
    write_tree(root, {"pkg/deep/restored.py": "def theta():\n    return 8\n"})
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert folder.stat().st_mtime_ns == before.st_mtime_ns
    assert engine.update([name])[0].added == 1
    assert [h.path for h in engine.search("theta", [name])] == ["pkg/deep/restored.py"]


def test_a_folder_swapped_for_one_with_the_same_mtime_is_listed(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = _indexed(engine, root)
    old = root / "pkg" / "deep"
    stamp = old.stat().st_mtime_ns
    twin = tmp_path / "twin"
    write_tree(twin, {"c.py": "def gamma():\n    return 3\n", "iota.py": "def iota():\n    return 9\n"})
    os.utime(twin, ns=(stamp, stamp))
    pkg_stamp = (root / "pkg").stat().st_mtime_ns
    old.rename(tmp_path / "gone")
    twin.rename(old)
    os.utime(root / "pkg", ns=(pkg_stamp, pkg_stamp))  # as a restore tool leaves it
    assert engine.update([name])[0].added == 1
    assert [h.path for h in engine.search("iota", [name])] == ["pkg/deep/iota.py"]
