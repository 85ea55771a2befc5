"""Which homes list which collection of a shared index (docs/postgres.md "What each home sees").

A PostgreSQL index is shared by every home (a QMD_DAEMON_HOME: a developer's machine, a CI job)
that names the server. `collection remove` in one of them takes the collection out of that home's
index.yml; its rows, which took the others hours to embed, are deleted only when no other home
still lists it, or when the user asks for it (`--purge`). So the server keeps a row per (collection,
home) in `collection_homes`, each home known by an id kept in its own state folder, with a label a
person can read (user@host:state folder) and when that home last said it lists it.

A home that vanished (a laptop reinstalled, a CI runner retired) never unlists its collections: a
listing not renewed for STALE_DAYS no longer keeps rows. Homes renew theirs whenever they open
the index (Engine.backend, at most hourly in a long-lived daemon) and on every update.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import socket
import tempfile
import time
import uuid
from collections.abc import Collection
from pathlib import Path

import psycopg

from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore, list_home, lock_collection
from qmd_daemon.store.protocols import STALE_DAYS, HomeListing, Release

_HOME_FILE = "home-id"


def home_identity(state_dir: Path) -> tuple[str, str]:
    """This home's id (created once, 0600, under its state folder) and its label. Two processes
    of one home starting at once agree on one id: the file is linked into place, never replaced."""
    path = state_dir / _HOME_FILE
    label = f"{getpass.getuser()}@{socket.gethostname()}:{state_dir}"
    try:
        return path.read_text(encoding="utf-8").strip(), label
    except FileNotFoundError:
        pass
    state_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{_HOME_FILE}.", dir=state_dir)  # 0600 from creation
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"{uuid.uuid4()}\n")
        with contextlib.suppress(FileExistsError):  # another process of this home made it first
            os.link(tmp, path)
    finally:
        os.unlink(tmp)
    return path.read_text(encoding="utf-8").strip(), label


class PostgresHomes:
    """The CollectionHomes protocol (store/protocols.py) over `collection_homes`."""

    def __init__(self, chunks: PostgresChunkStore, home_id: str, label: str):
        self.chunks = chunks
        self.db = chunks.db
        self.home_id = home_id
        self.label = label

    def sync(self, names: Collection[str]) -> None:
        """This home lists exactly NAMES (those the server holds): their listings renewed, any
        other of this home's dropped (index.yml edited by hand). Listings under another id are
        never dropped here, not even of this label: machines made from one image (a container
        with a fixed hostname, a cloned VM) share user, host and state folder, and each would
        unlist the other. One this home left behind when its state folder was wiped goes stale
        (STALE_DAYS); until then a remove names it and keeps the rows (`--purge` deletes them).
        A role that may only read (a search-only account) lists nothing and searches all the same;
        a collection another home's remove deletes meanwhile fails the insert's foreign key (the
        whole renewal rolls back, the next open renews the rest): nothing to list, no error."""
        try:
            with self.db.transaction():
                self.db.execute(
                    """DELETE FROM collection_homes h USING collections c
                       WHERE h.collection_id = c.id AND h.home_id = %s AND NOT c.name = ANY(%s)""",
                    (self.home_id, list(names)),
                )
                list_home(self.db, (self.home_id, self.label), "name = ANY(%s)", (list(names),))
        except IndexDatabaseError as exc:
            if not isinstance(exc.__cause__, (psycopg.errors.InsufficientPrivilege,
                                              psycopg.errors.ReadOnlySqlTransaction,
                                              psycopg.errors.ForeignKeyViolation)):
                raise

    def listings(self) -> dict[str, list[HomeListing]]:
        """Every collection's homes, by collection name, this home's first, then most recent."""
        rows = self.db.execute(
            """SELECT c.name, h.home_id, h.label, h.seen_at FROM collection_homes h
               JOIN collections c ON c.id = h.collection_id
               ORDER BY c.name, h.home_id = %s DESC, h.seen_at DESC""",
            (self.home_id,),
        ).fetchall()
        out: dict[str, list[HomeListing]] = {}
        for name, home_id, label, seen_at in rows:
            out.setdefault(name, []).append(self._listing(home_id, label, seen_at))
        return out

    def _listing(self, home_id: str, label: str, seen_at: float) -> HomeListing:
        stale = time.time() - seen_at > STALE_DAYS * 86400
        return HomeListing(label=label, seen_at=seen_at, stale=stale, this_home=home_id == self.home_id)

    def release(self, name: str, collection_id: int, purge: bool) -> Release:
        """This home no longer lists collection NAME (of id COLLECTION_ID when it was removed):
        its listing goes, and the rows too when no other home lists it now (stale listings do
        not count) or PURGE. One transaction under the collection's lock, so two homes removing
        it at once cannot both keep it, and a remove cut short is finished by running this
        again (Engine._finish_removals)."""
        with self.db.transaction():
            lock_collection(self.db, name)
            current = self.chunks.collection_id(name)
            if current is None or current != collection_id:  # gone, or made anew since: not ours
                return Release(name=name, deleted=False, existed=False, others=[], stale=[])
            self.db.execute(
                "DELETE FROM collection_homes WHERE collection_id = %s AND home_id = %s",
                (collection_id, self.home_id),
            )
            rows = self.db.execute(
                "SELECT home_id, label, seen_at FROM collection_homes WHERE collection_id = %s"
                " ORDER BY seen_at DESC",
                (collection_id,),
            ).fetchall()
            listed = [self._listing(*row) for row in rows]
            others = [home for home in listed if not home.stale]
            stale = [home for home in listed if home.stale]
            deleted = purge or not others
            if deleted:
                self.chunks.remove_collection(name)
            return Release(name=name, deleted=deleted, existed=True, others=others, stale=stale)
