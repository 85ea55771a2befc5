"""Refreshes the watcher makes unnecessary: a collection is not walked again while nothing changed.

A refresh walks every folder of a root, matches each path against the ignore rules and stats each
file, even when nothing changed (seconds over a few hundred thousand files). When inotify watches
the whole root (`RootWatcher.mark` is not None), every change a scan could index moves the root's
mark; so a collection whose last finished refresh started at the mark the root still has, with the
same config and the same copy in the index, has nothing new to read, and its refresh is skipped.

Marks are sequence numbers, not "changed" flags: a change that lands while a refresh runs moves the
mark past the one that refresh started at, so the next refresh walks. A re-listed watch (queue
overflow, a new .gitignore, a changed spec) and a new daemon start from marks no record holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from qmd_daemon.config import CollectionConfig
from qmd_daemon.daemon.watch_scope import RootSpec
from qmd_daemon.engine import IndexStamp

WHOLE_TREE = RootSpec("**", ())  # two collections on one root: everything is watched


def spec_of(collection: CollectionConfig) -> RootSpec:
    """The rules the root of this collection alone is watched by."""
    return RootSpec(collection.pattern, tuple(collection.ignore))


@dataclass(frozen=True)
class Watch:
    """A root as the watcher stood for it when a refresh started."""

    root: Path
    mark: int  # RootWatcher.mark, read after a flush
    spec: RootSpec  # the rules its folders were listed by

    def covers(self, collection: CollectionConfig) -> bool:
        """The watch is on this collection's root and listed its folders by rules that take in
        all the collection takes (index.yml may have changed since the watch was made)."""
        return collection.path == self.root and self.spec in (spec_of(collection), WHOLE_TREE)


@dataclass(frozen=True)
class Indexed:
    """What a finished refresh of one collection read: the root's mark when it started, the
    config it walked with, the index's stamp of the collection."""

    mark: int
    collection: CollectionConfig
    stamp: IndexStamp


@dataclass
class RefreshPlan:
    """One refresh job: made on the event loop as the job starts (the marks, read after a flush),
    asked on the writer thread before each collection's walk (`unchanged`)."""

    watches: dict[str, Watch]  # collection -> its root's watch now (only roots the watcher vouches for)
    before: dict[str, Indexed]  # what earlier refreshes read
    seen: dict[str, Indexed] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def unchanged(self, collection: CollectionConfig, stamp: IndexStamp) -> bool:
        """For `Engine.update`: True when nothing of this collection changed since it was read."""
        watch = self.watches.get(collection.name)
        if watch is None or not watch.covers(collection):
            return False
        now = Indexed(watch.mark, collection, stamp)
        self.seen[collection.name] = now
        if self.before.get(collection.name) != now:
            return False
        self.skipped.append(collection.name)
        return True


class RefreshVouch:
    """The record of what each collection's last finished refresh read, kept by the daemon."""

    def __init__(self) -> None:
        self._indexed: dict[str, Indexed] = {}

    def plan(self, watches: dict[str, Watch]) -> RefreshPlan:
        return RefreshPlan(watches, dict(self._indexed))

    def settle(self, plan: RefreshPlan, ok: bool) -> None:
        """After the job: a finished one leaves what it read as the record; a failed one drops the
        record of every collection it reached. (A record whose root is no longer vouched for can
        never match again: the watch is re-made before it is, and that moves the mark.)"""
        if ok:
            self._indexed.update(plan.seen)
        else:
            for name in plan.seen:
                self._indexed.pop(name, None)
