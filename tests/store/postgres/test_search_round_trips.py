"""Postgres-only: what one search costs in round trips. Every statement is a trip to the server
(a team's server is across a network), so a search asks the data state once, and another
machine's write is still seen by the next search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from qmd_daemon.config import CollectionConfig
from qmd_daemon.ingest.indexer import update_collection
from qmd_daemon.search.pipeline import SearchOptions, run_search
from qmd_daemon.settings import Settings
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase

OPTIONS = SearchOptions(vectors=False)


def _write(root: Path, name: str, text: str) -> None:
    (root / name).write_text(text, encoding="utf-8")


def _update(store: PostgresChunkStore, root: Path) -> None:
    update_collection(store, CollectionConfig("repo", root), Settings.from_env(), progress=False)


def _asks(store: PostgresChunkStore, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The data states STORE's database answers from now on, one per round trip."""
    answered: list[Any] = []
    ask = store.db.data_state

    def counted() -> Any:
        answered.append(ask())
        return answered[-1]

    monkeypatch.setattr(store.db, "data_state", counted)
    return answered


def test_a_search_asks_the_data_state_once_and_sees_another_machines_write(
    postgres_url: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _write(root, "billing.py", "def charge_card(amount):\n    return gateway.charge(amount)\n")
    _write(root, "refunds.py", "def refund_card(amount):\n    return gateway.refund(amount)\n")
    reader = PostgresChunkStore(PostgresDatabase(postgres_url))  # this machine's daemon
    writer = PostgresChunkStore(PostgresDatabase(postgres_url))  # another machine's
    try:
        _update(writer, root)
        cid = reader.collection_id("repo")
        assert cid is not None
        asks = _asks(reader, monkeypatch)
        hits = run_search(reader, "charge card gateway amount", [cid], OPTIONS)
        assert [h.path for h in hits][:1] == ["billing.py"]
        assert len(asks) == 1, "one search, one data_state round trip"

        assert run_search(reader, "zyzzyva invoice", [cid], OPTIONS) == []  # no chunk says either
        _write(root, "invoice.py", "def zyzzyva_invoice(order):\n    return render(order)\n")
        _update(writer, root)
        found = run_search(reader, "zyzzyva invoice", [cid], OPTIONS)
        assert [h.path for h in found] == ["invoice.py"], "the other machine's write, seen next search"
        assert len(asks) == 3 and asks[2] != asks[1]
    finally:
        reader.close()
        writer.close()
