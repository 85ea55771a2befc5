"""chunks_in: the chunks of a search's scope, counted once over the table when the scope is every
collection. Same number as the per-collection counts, on a real index of two of this repository's
packages in a temp home."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def test_chunks_in_counts_the_scope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "home"))
    engine = Engine(Settings.from_env())
    try:
        for package in ("search", "text"):
            shutil.copytree(REPO / "qmd_daemon" / package, tmp_path / package)
            engine.add_collection(tmp_path / package, package)
        engine.update(progress=False)
        store = engine.store
        search, text = engine.collection_ids(["search", "text"])
        assert 0 < store.chunk_count(text) < store.chunk_count(search)
        assert store.chunks_in([search]) == store.chunk_count(search)
        assert store.chunks_in([search, text]) == store.chunk_count(search) + store.chunk_count(text)
        assert store.chunks_in([]) == 0
        engine.remove_collection("text")
        assert store.chunks_in([search]) == store.chunk_count(search)
    finally:
        engine.close()
