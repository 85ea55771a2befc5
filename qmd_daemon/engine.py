"""The engine: one index, the configured collections, update and search. Used in-process by the
CLI, the daemon and the benchmarks; it never imports either front end."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
import unicodedata
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

from qmd_daemon.config import CollectionConfig, IndexConfig, RefusedCollection
from qmd_daemon.errors import ConfigError, UnknownCollectionError, UsageError
from qmd_daemon.ingest.indexer import INDEX_FORMAT, UpdateReport, update_collection
from qmd_daemon.ingest.listings import listings_file
from qmd_daemon.ingest.root_commits import head_state, root_commits
from qmd_daemon.ingest.root_policy import check_root, check_size, missing_reason
from qmd_daemon.ingest.scan import compile_mask, compile_patterns, find_git_root, is_submodule
from qmd_daemon.ingest.skip_log import read_skipped, record_skipped
from qmd_daemon.ingest.worktrees import removed_worktree, worktree_common_dir
from qmd_daemon.locks import held_by, waiting_for, writer_lock_path
from qmd_daemon.models.abort import AbortFlag
from qmd_daemon.models.embedder import Embedder
from qmd_daemon.models.model_set import ModelSet
from qmd_daemon.search.hit import Hit
from qmd_daemon.search.pipeline import SearchModels, SearchOptions, SearchTrace, run_search
from qmd_daemon.search.static_list import StaticTier
from qmd_daemon.settings import DEFAULT_MASK, Settings
from qmd_daemon.static_vectorize import static_pending
from qmd_daemon.store.backends import Backend, configured_url, copy_to_postgres, open_backend
from qmd_daemon.store.pending_order import EmbedPriority
from qmd_daemon.store.protocols import ChunkStore, HomeListing, Release, VectorStore
from qmd_daemon.vectorize import EmbedBusy, EmbedHint, EmbedReport, embed_pending

IndexStamp = tuple[int | None, str]  # (collection id, index format): see Engine.index_stamp
# Indexed files of a gone collection looked for in a folder of its name (default_name): most of
# them there, it is the collection's folder moved; few, another repository of the same name
MOVED_SAMPLE = 20
# A long-lived daemon renews its home's listings on a shared index this often (a listing not
# renewed for weeks no longer keeps a collection's rows: store/postgres/homes.py)
LISTING_RENEWAL_S = 3600.0
# New chunks given the vectors of identical ones at update time (Engine._copy_known_vectors): a
# first window this small tells a twin of an indexed repository from an unrelated one
_TWIN_PROBE = 64
_TWIN_WINDOW = 2000


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _unlisted_line(name: str, *, shared: bool) -> str:
    """`collection remove` of a name the index holds and this index.yml does not list."""
    holder = ("the shared index holds it for other homes" if shared else
              "the index holds it (another index.yml's, or an entry edited out of this one)")
    return (f"no collection named '{name}' in this index.yml; {holder} (see `qmd-daemon status`): "
            f"`collection remove --purge {name}` deletes it{' for every home' if shared else ''}")


def _covers(collection: CollectionConfig, path: Path) -> bool:
    """Whether `collection` indexes the files under `path`. A collection in git is listed by git
    and its checked-out submodules' git; a worktree or clone checked out inside it is in neither
    listing, so it is not covered (a walk, outside git, takes every folder)."""
    if not _is_within(path, collection.path):
        return False
    inner = find_git_root(path)
    while inner is not None and inner != collection.path and _is_within(inner, collection.path):
        if not is_submodule(inner):
            return find_git_root(collection.path) is None
        inner = find_git_root(inner.parent)
    return True


def _name_char(char: str) -> bool:
    """A letter, mark or digit of any script, or `.`, `_`, `-`: what a collection name may hold.
    The name reaches only parameters (both backends: FTS5 scopes by the collection's id), JSON,
    YAML and hashed file names, so no part needs ASCII."""
    return char in "._-" or unicodedata.category(char)[0] in "LMN"


_NAME_MAX = 100  # characters of a collection name


def _name_ok(name: str) -> bool:
    first_ok = 0 < len(name) <= _NAME_MAX and unicodedata.category(name[0])[0] in "LN"
    return first_ok and all(map(_name_char, name))


def _slug(text: str) -> str:
    """A folder's name as a collection name: its letters and digits in whatever script (`café`,
    `日本`; NFC, as macOS hands names decomposed), any other run of characters one `-`. A name with
    none of them is named by its hash: `repo-root` for every such folder would pool them."""
    text = unicodedata.normalize("NFC", text)
    kept = "".join(char if _name_char(char) else "\0" for char in text)
    slug = re.sub("\0+", "-", kept).strip("-._").lower()
    return slug or f"folder-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def _fit(name: str, tag: str | None = None) -> str:
    """`name`, with `-tag` when given, within the characters a name may hold: a longer one is cut
    and tagged with a hash of the whole (the same folder name, the same name; two long names that
    differ only past the cut, two names)."""
    if tag is None:
        if len(name) <= _NAME_MAX:
            return name
        tag = hashlib.sha256(name.encode()).hexdigest()[:6]
    return f"{name[: _NAME_MAX - len(tag) - 1].rstrip('-._')}-{tag}"


def _earlier_slug(text: str) -> str:
    """The name versions before this one gave a folder (ASCII letters and digits only, `root`
    when none were left): a non-ASCII folder moved since takes back the collection of that name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._").lower() or "root"


def _listing_json(home: HomeListing) -> dict[str, Any]:
    return {"label": home.label, "seen_at": home.seen_at, "stale": home.stale, "this_home": home.this_home}


def folder_there(path: Path) -> bool:
    """Whether a collection's folder is there. One behind a folder this user cannot enter (EACCES:
    Path.is_dir raises it) is not moved or deleted: it counts as there; every update and search
    stopped at it with a traceback."""
    try:
        return path.is_dir()
    except OSError:
        return True


def _git_folder_of(collection: CollectionConfig) -> Path | None:
    """The common git folder of a collection's repository: recorded for a linked worktree, the
    root's own `.git` folder for a main checkout; None for anything else."""
    if collection.worktree_of is not None:
        return collection.worktree_of
    dot_git = collection.path / ".git"
    try:
        return dot_git.resolve() if dot_git.is_dir() else None
    except OSError:  # a root this user cannot list
        return None


def _repository_of(common_dir: Path) -> Path:
    """The repository a common git folder belongs to: its work tree's, or itself when bare."""
    return common_dir.parent if common_dir.name == ".git" else common_dir


class Engine:
    """One index and its collections, opened lazily, for one thread at a time: the CLI and the MCP
    server hold one, the daemon two (a reader for searches and a writer for jobs, each on its own
    connection, sharing one set of models), so a search never waits behind a refresh's writes."""

    def __init__(self, settings: Settings | None = None):
        self.settings = settings or Settings.from_env()
        self._backend: Backend | None = None
        self._opened: tuple[str, str | None] | None = None  # the index.yml target _backend is of
        # the index.yml this home's listings on a shared index were last renewed from, and when next
        self._listed: tuple[IndexConfig, float] | None = None
        self._config: tuple[tuple[int, int, int], IndexConfig] | None = None
        self._models: ModelSet | None = None
        self._models_owner: Engine | None = None
        self.stop_waiting = threading.Event()  # set: a wait for the writer lock gives up (LockBusy)
        # the second instance of the embedder while an `own_model` embed run lasts (else None)
        self.background_embedder: Embedder | None = None
        # roots read but not recorded (index.yml's folder not writable): not asked of git again
        self._roots_unrecorded: set[Path] = set()

    @property
    def backend(self) -> Backend:
        """The index as index.yml's `backend:` says, opened on first use and again when index.yml
        names another one: a daemon started before `backend: postgres` was set answered from the
        local file, and never saw what teammates indexed on the server."""
        config = self.config()
        target = (config.backend(), configured_url(config, self.settings))
        if self._backend is not None and target != self._opened:
            self._backend.close()
            self._backend = None
        if self._backend is None:
            self._backend = open_backend(self.settings)
            self._opened = target
            self._listed = None
        homes = self._backend.homes
        if homes is not None and (
            self._listed is None or self._listed[0] is not config or time.monotonic() > self._listed[1]
        ):  # a shared index: which collections this home lists, renewed (homes.STALE_DAYS)
            homes.sync(config.listed())
            self._listed = (config, time.monotonic() + LISTING_RENEWAL_S)
        return self._backend

    @property
    def store(self) -> ChunkStore:
        return self.backend.chunks

    @property
    def models(self) -> ModelSet:
        """The configured models (index.yml `models:`), built lazily, never downloaded here; a
        changed `models:` block (a long-lived daemon, then `pull --profile`) builds a new set, and so
        does another index (their LLM cache is the index's)."""
        if self._models_owner is not None:
            return self._models_owner.models
        wanted = self.config().models()
        if self._models is not None and (
            self._models.config != wanted or self._models.cache is not self.backend.llm_cache
        ):
            self._models.unload()
            self._models = None
        if self._models is None:
            self._models = ModelSet(wanted, self.settings.models_dir, self.backend.llm_cache)
        return self._models

    def built_models(self) -> ModelSet | None:
        """The model set when one is built, never building it nor reading index.yml: the daemon's
        /health reports it from its event loop while the reader thread may be loading a model."""
        owner = self._models_owner
        return owner.built_models() if owner is not None else self._models

    def share_models_with(self, other: Engine) -> None:
        """Use `other`'s models: one copy of each in memory and one lock per model, for a second
        Engine (the daemon's writer) that works beside the first on its own connection."""
        self._models_owner = other

    @property
    def vectors(self) -> VectorStore | None:
        """Vectors as `models: {quantization: float|int8}` says (int8: 1/4 the size; recall@10
        0.957 of float on the dev eval, bench/quantization.py)."""
        vectors = self.backend.vectors
        if vectors is None:
            return None
        return vectors(str(self.config().models().get("quantization") or "float"))  # checked there

    def writing(self) -> AbstractContextManager[None]:
        """One index writer at a time across processes (CLI, daemon, a second terminal): a second
        SQLite writer would fail with "database is locked" after 30 s; this one waits, and says so."""
        return waiting_for(
            writer_lock_path(self.settings.index_path),
            "waiting for another update",
            cancelled=self.stop_waiting.is_set,
        )

    def close(self) -> None:
        if self._models is not None:
            self._models.unload()
            self._models = None
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def config(self) -> IndexConfig:
        """index.yml, re-read only when the file changed (searches read it every time)."""
        path = self.settings.config_file
        try:
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)  # a save is a rename: a new inode
        except OSError:
            return IndexConfig.load(path)
        if self._config is None or self._config[0] != stamp:
            self._config = (stamp, IndexConfig.load(path))
        return self._config[1]

    # -- collections ---------------------------------------------------------------------------

    def default_name(self, path: Path, config: IndexConfig) -> str:
        """`repo-<folder>` for a git repository (its top level), else the folder's name (`_slug`:
        letters of any script kept, lowercased).

        Two different folders with the same name get distinct names that stay stable: the second
        one carries its parent folder's name (a hash of its absolute path when that is taken too).
        A name whose folder is gone is taken by a folder holding its files: a repository moved
        elsewhere takes its name, and its index, back (add_collection); another one of that name
        does not (_holds_files_of). On a shared (PostgreSQL) index a name another home indexed
        for other files is taken too (_free).
        """
        prefix = "repo-" if find_git_root(path) == path else ""
        base = _fit(f"{prefix}{_slug(path.name)}")  # a folder name of 120 letters was refused
        taken = config.collections()
        if base in taken and taken[base].path == path:
            return base
        for name in dict.fromkeys((base, f"{prefix}{_earlier_slug(path.name)}")):
            if name in taken and not folder_there(taken[name].path) and self._holds_files_of(path, name):
                return name
        used = set(config.listed())  # a set-aside entry keeps its name (the user's mask is theirs)
        if self._free(base, path, used):
            return base
        beside = _fit(f"{base}-{_slug(path.parent.name)}") if path.parent.name else base
        if self._free(beside, path, used):  # `/a/proj` and `/b/proj`: repo-proj and repo-proj-b
            return beside
        return _fit(base, hashlib.sha256(str(path).encode()).hexdigest()[:6])

    def _free(self, name: str, path: Path, taken: set[str]) -> bool:
        """Whether PATH may take NAME: unlisted here, and in the index either absent or of this
        repository. A shared (PostgreSQL) index holds other homes' collections: a teammate's
        `repo-app` checked out elsewhere is shared, an unrelated `repo-app` of theirs is not (each
        update would replace the other's files)."""
        return name not in taken and self._holds_files_of(path, name)

    def _holds_files_of(self, path: Path, name: str) -> bool:
        """Whether most of a sample of collection NAME's indexed files are under PATH: its folder
        moved there. A folder gone only for now (a drive unmounted, a network share down) must not
        lose its index to an unrelated repository with the same folder name searched meanwhile."""
        collection_id = self.store.collection_id(name)
        files = self.store.file_paths([collection_id])[:MOVED_SAMPLE] if collection_id is not None else []
        return not files or 2 * sum((path / relative).is_file() for _, relative in files) > len(files)

    def collection_for_path(self, path: Path) -> CollectionConfig | None:
        resolved = path.resolve()
        for collection in self.config().collections().values():
            if collection.path == resolved:
                return collection
        return None

    def collection_at(self, path: Path) -> CollectionConfig | None:
        """The collection indexing the files under `path`: the one rooted there, else the deepest
        one containing it; what a search made from that folder covers (with those included by
        default: search_scope), whichever front end it comes from."""
        resolved = path.resolve()
        exact = self.collection_for_path(resolved)
        if exact is not None:
            return exact
        containing = [c for c in self.collections().values() if _covers(c, resolved)]
        if containing:
            return max(containing, key=lambda c: len(c.path.parts))
        # a folder of a collection left out for its mask: said with the fix, never registered
        # anew (that would reset the user's mask to the default behind their back)
        refused = [r for r in self.refused_collections().values() if _is_within(resolved, r.path.resolve())]
        if refused:
            raise ConfigError(refused[0].message)
        return None

    def add_collection(
        self,
        path: Path,
        name: str | None = None,
        *,
        mask: str | None = None,
        ignore: list[str] | None = None,
        include_by_default: bool | None = None,
        on_demand: bool = False,
    ) -> CollectionConfig:
        """Register (or re-configure) the folder `path`. `on_demand`: a client searched there and
        nobody added it: only a git repository's top level is registered then (root_policy)."""
        path = Path(path).expanduser()
        if not path.exists():
            raise UsageError(f"path {path} {missing_reason(path).value}")
        if not path.is_dir():
            raise UsageError(f"path {path} is a file; a collection is a folder")
        path = path.resolve()
        refused = next((r for r in self.refused_collections().values() if r.path.resolve() == path), None)
        if refused is not None and mask is None:  # only a valid mask brings it back (its fix)
            raise ConfigError(refused.message)
        check_root(path, on_demand=on_demand)
        if self.collection_for_path(path) is None:
            check_size(path, self.settings, mask=mask or DEFAULT_MASK, ignore=list(ignore or []))
        with IndexConfig.editing(self.settings.config_file) as config:
            existing = next((c for c in config.collections().values() if c.path == path), None)
            if name is None and existing is not None:
                name = existing.name
            if name is None and refused is not None:
                name = refused.name
            name = name or self.default_name(path, config)
            if not _name_ok(name):
                raise UsageError(
                    f"collection name '{name}' must be letters, digits, '.', '_' or '-' (at most 100, "
                    f"a letter or digit first)"
                )
            other = config.collections().get(name)
            # a set-aside entry of that name is the user's too: its folder, ignores and default stay
            kept: CollectionConfig | RefusedCollection | None = other or config.refused().get(name)
            if kept is not None and kept.path != path and folder_there(kept.path):
                raise UsageError(f"collection '{name}' already exists for {kept.path}")
            # else: its folder is gone (moved here, most likely): the collection follows it, and the
            # next update re-reads only what differs (paths are kept relative to the root)
            compile_mask(mask or DEFAULT_MASK)  # a bad pattern is refused now, not at the next update
            compile_patterns(list(ignore or []), "ignore")
            keep_default = bool(kept and kept.include_by_default)
            collection = CollectionConfig(
                name=name,
                path=path,
                pattern=mask or (other.pattern if other else DEFAULT_MASK),
                ignore=list(ignore) if ignore is not None else (list(kept.ignore) if kept else []),
                include_by_default=keep_default if include_by_default is None else include_by_default,
                worktree_of=worktree_common_dir(path),
                # never carried over: a `collection add` of the same folder is how its roots are read
                # again (another repository checked out there, a rewritten history), at the next update
                root_commits=(),
            )
            config.set_collection(collection)
            # a remove of this name cut short (index.yml's `removing:`) is called off: finished by
            # the next update, it deleted the rows the collection just added back uses
            config.set_removing(name, None)
        return collection

    def remove_collection(self, name: str, *, purge: bool = False) -> Release:
        """Waits for a running update (of any process) to finish, then forgets the collection:
        index.yml first, its rows after. A search that finds the rows gone then finds the name
        unlisted and says so (`search`), never an empty answer; a remove cut short between the
        two is finished by the next update or remove (index.yml's `removing:` names it).

        On a shared (PostgreSQL) index the rows go only when no other home lists the collection,
        or with PURGE (every home's rows; also for a collection only other homes list, or none:
        a home that vanished). One index (SQLite): the rows go; one this index.yml does not list
        (another index.yml's on the same QMD_INDEX_PATH, or an entry edited out) only with PURGE:
        without it status showed its rows for good and nothing could delete them."""
        homes = self.backend.homes
        with self.writing():
            with IndexConfig.editing(self.settings.config_file) as config:
                pending = config.removing().get(name)
                listed = config.remove_collection(name)
                collection_id = self.store.collection_id(name)
                if not listed and pending is None:
                    if collection_id is None:
                        raise UnknownCollectionError(f"no collection named '{name}'")
                    if not purge:
                        raise UnknownCollectionError(_unlisted_line(name, shared=homes is not None))
                if collection_id is not None and (pending is None or purge and not pending.purge):
                    config.set_removing(name, collection_id, purge)
            done = self._finish_removals()
        return done.get(name) or Release(name=name, deleted=False, existed=False, others=[], stale=[])

    def _finish_removals(self) -> dict[str, Release]:
        """Finish each removal index.yml's `removing:` names, then clear the entries. Only the
        collection of the id recorded is touched (a PostgreSQL index is shared: another user's
        collections of the same name are theirs); there this home's listing goes, and the rows
        only when no other home lists it or the removal purges (CollectionHomes.release).
        The caller holds the writer lock."""
        pending = self.config().removing()
        homes = self.backend.homes
        done = {}
        for name, removal in pending.items():
            if homes is not None:
                done[name] = homes.release(name, removal.collection_id, removal.purge)
            else:
                existed = self.store.collection_id(name) == removal.collection_id
                if existed:
                    with self.store.transaction():
                        self.store.remove_collection(name)
                done[name] = Release(name=name, deleted=existed, existed=existed, others=[], stale=[])
            record_skipped(self.settings.state_dir, name, None)
            for cache in ("folders", "skipped"):
                listings_file(self.settings.cache_dir, name, cache).unlink(missing_ok=True)
        if pending:
            with IndexConfig.editing(self.settings.config_file) as config:
                for name in pending:
                    config.set_removing(name, None)
        return done

    def collections(self) -> dict[str, CollectionConfig]:
        return self.config().collections()

    def refused_collections(self) -> dict[str, RefusedCollection]:
        """index.yml entries left out for a mask today's rules refuse (config.RefusedCollection):
        every front end names them with the fix; the other collections keep working."""
        return self.config().refused()

    def refuse_if_named(self, names: list[str]) -> None:
        refused = self.refused_collections()
        named = next((refused[n] for n in names if n in refused), None)
        if named is not None:
            raise ConfigError(named.message)

    def _select(self, names: list[str] | None) -> list[CollectionConfig]:
        known = self.collections()
        if not names:
            return list(known.values())
        self.refuse_if_named(names)
        missing = [n for n in names if n not in known]
        if missing:
            raise UnknownCollectionError.named(missing[0])
        return [known[n] for n in names]

    # -- indexing ------------------------------------------------------------------------------

    def update(
        self,
        names: list[str] | None = None,
        *,
        progress: bool | None = None,
        unchanged: Callable[[CollectionConfig, IndexStamp], bool] | None = None,
        keep_going: bool = False,
    ) -> list[UpdateReport]:
        """Bring the collections' index up to date with their files. `unchanged(collection, stamp)`
        is asked before each walk, under the writer lock: True when the caller knows nothing under
        the root changed since it was indexed with this config at this stamp (the daemon's watcher,
        daemon/vouch.py), so that collection is not walked and gets no report. `keep_going`: a
        collection that cannot be updated (its folder moved or deleted) gets a report with its
        `error` and the others are updated all the same; else its UsageError stops the update."""
        reports = self._forget_removed_worktrees()
        if self.config().removing():  # a remove cut short: its rows go before anything is indexed
            with self.writing():
                self._finish_removals()
        for selected in self._select(names):
            with self.writing():
                # index.yml as it is now: the collection may have been removed or changed meanwhile
                current = self.collections().get(selected.name)
                if current is None:
                    continue
                if not current.root_commits:  # also for a root the watcher vouches for
                    self._record_root_commits(current)
                    # the entry as recorded: the watcher's vouch compares the config a refresh
                    # walked with, and the one without roots would make the next refresh walk again
                    current = self.collections().get(selected.name) or current
                if unchanged is not None and unchanged(current, self.index_stamp(current.name)):
                    continue
                try:
                    report = update_collection(self.store, current, self.settings, progress=progress)
                except UsageError as exc:
                    if not keep_going:
                        raise
                    why = str(exc)
                    if current.worktree_of is not None and not folder_there(current.path):
                        repository = _repository_of(current.worktree_of)
                        why += (f"; a git worktree of {repository}: if it was deleted for good, "
                                f"`git -C {repository} worktree prune` lets the next update forget it")
                    reports.append(UpdateReport(collection=current.name, error=why))
                    continue
                if report.chunks_added:
                    self._copy_known_vectors(current.name)
                if report.chunks_removed:
                    self._trim_kept_vectors()
                record_skipped(self.settings.state_dir, current.name, report.skipped)
                reports.append(report)
        return reports

    def _record_root_commits(self, collection: CollectionConfig) -> None:
        """The root commits of the collection's repository into its index.yml entry, once
        (ingest/root_commits.py): search_scope then tells a separate clone of a repository included
        by default without asking git. Nothing recorded outside a repository's top level, nor where
        index.yml's folder cannot be written (a read-only mount: EACCES on the edit's lock file
        failed every update, which never needed to write index.yml); a clone is then searched
        beside the repository, as before. A repository git tells no roots of (no commit yet, or
        refused by safe.directory) is recorded so too, with HEAD as its files say, and git is not
        asked again until HEAD has moved (root_commits.head_state)."""
        if collection.path in self._roots_unrecorded:
            return
        head = head_state(collection.path)
        if head is None or head == collection.no_roots_at:  # no repository's top; asked at this HEAD
            return
        roots = root_commits(collection.path)
        if roots is None:  # git could not be asked (not on PATH): nothing to keep
            return
        try:
            with IndexConfig.editing(self.settings.config_file) as config:
                current = config.collections().get(collection.name)
                # the entry as read above: a `collection add` meanwhile may have given the name another folder
                if current is not None and current.path == collection.path and not current.root_commits:
                    recorded = replace(current, root_commits=roots, no_roots_at=None if roots else head)
                    if recorded != current:
                        config.set_collection(recorded)
        except OSError:
            self._roots_unrecorded.add(collection.path)

    def _copy_known_vectors(self, name: str) -> None:
        """Give the new chunks of collection NAME whose text already has a deep vector elsewhere
        (a worktree or clone of an indexed repository; a branch switched back to, whose chunks'
        vectors were kept as they went: store/kept_vectors.py) that vector now,
        under the caller's writer lock, as the embed job would a moment later: the first search in
        a fresh worktree was keyword-only while its 783 chunks waited for copies (churnwalk). A
        first window with few twins (an unrelated repository) stops it after WINDOW lookups."""
        try:
            vectors = self.vectors
        except ConfigError:  # a bad `models:` block: an update does not read it; what embeds says it
            return
        collection_id = self.store.collection_id(name)
        if vectors is None or collection_id is None:
            return
        window = _TWIN_PROBE
        while True:
            pending = vectors.pending([collection_id], window)
            left = vectors.copy_identical(pending)
            if not pending or 2 * len(left) > len(pending) or len(pending) < window:
                return
            window = _TWIN_WINDOW

    def _trim_kept_vectors(self) -> None:
        """Hold the deep vectors kept after their chunks went (store/kept_vectors.py) to their
        cap, oldest dropped first, after an update that deleted chunks (under the caller's writer
        lock). Apart from the deletion's transaction: a crash in between leaves a few too many
        until the next such update, never a vector lost that the cap keeps."""
        try:
            vectors = self.vectors
        except ConfigError:  # a bad `models:` block: what embeds says it
            return
        if vectors is not None:
            vectors.trim_kept()

    def _forget_removed_worktrees(self) -> list[UpdateReport]:
        """Forget each collection of a linked git worktree that git removed (ingest/worktrees.py:
        folder gone, the repository's git folder there and no longer listing it), whichever
        collections this update was asked for: agents make and remove a worktree per task, and
        each would stay in the index for good. A worktree registered before `worktreeOf` was
        recorded gets it here while its folder is still there."""
        found: dict[str, tuple[Path, Path]] = {}
        forget: list[CollectionConfig] = []
        for collection in self.collections().values():
            if collection.worktree_of is None:
                # no is_dir() first: behind a folder this user cannot enter it raises EACCES, and
                # that one collection stopped every collection's update (worktree_common_dir: None)
                common = worktree_common_dir(collection.path)
                if common is not None:
                    found[collection.name] = (collection.path, common)
            elif removed_worktree(collection.path, collection.worktree_of):
                forget.append(collection)
        if found:
            with IndexConfig.editing(self.settings.config_file) as config:
                for name, (path, common) in found.items():
                    current = config.collections().get(name)
                    # the name as read above: a `collection add` meanwhile may have given it another folder
                    if current is not None and current.worktree_of is None and current.path == path:
                        config.set_collection(replace(current, worktree_of=common))
        reports = []
        for collection in forget:
            now = self.collections().get(collection.name)
            if now is None or now.path != collection.path:  # re-added elsewhere meanwhile: not this one
                continue
            try:
                self.remove_collection(collection.name)
            except UnknownCollectionError:  # another process forgot it first
                continue
            repository = _repository_of(collection.worktree_of or collection.path)
            reports.append(UpdateReport(
                collection=collection.name,
                forgotten=f"forgot {collection.name}: its folder {collection.path} was a git worktree "
                          f"of {repository}, since removed (`git worktree list` no longer names it)",
            ))
        return reports

    def merge_step(self) -> bool:
        """One bounded step of the index's upkeep (store.merge_step), under the writer lock: True
        when more may be left. The daemon's job queue runs it while idle (daemon/jobs.py)."""
        with self.writing(), self.store.transaction():
            return self.store.merge_step()

    def index_stamp(self, name: str) -> IndexStamp:
        """What identifies the index's copy of a collection: it changes when another process
        removes and re-adds the collection, or indexes it with other rules."""
        collection_id = self.store.collection_id(name)
        return collection_id, self.store.index_format(collection_id) if collection_id is not None else ""

    def outdated_collections(self) -> list[str]:
        """Configured collections the index holds as another version read or chunked them (an
        upgrade): the next update of each re-reads it whole."""
        return [name for name in self.collections() if self.index_stamp(name)[1] not in ("", INDEX_FORMAT)]

    def migrate_to_postgres(
        self, database_url: str | None, *, progress: bool | None = None
    ) -> dict[str, Any]:
        """Copy the local index into PostgreSQL (`qmd-daemon migrate`), vectors included, holding
        the writer lock so no update changes it halfway. None: the server index.yml names."""
        with self.writing():
            return copy_to_postgres(self.settings, database_url, progress)

    def collection_ids(self, names: list[str]) -> list[int]:
        return [i for i in (self.store.collection_id(n) for n in names) if i is not None]

    def embed(
        self,
        names: list[str] | None = None,
        *,
        progress: bool | None = None,
        limit: int | None = None,
        yield_to: Callable[[], bool] | None = None,
        hint: Callable[[], EmbedHint] | None = None,
        own_model: bool = False,
        abort: AbortFlag | None = None,
    ) -> EmbedReport:
        """Give every chunk without a vector one; a no-op report when no embedding model is ready,
        the static pass alone with `models: {deep: off}`.
        `yield_to`: stop after the batch where it says True (vectorize.embed_pending). `hint`: asked
        as the run goes, which collection and files to embed first (recent edits go first anyway).
        `own_model`: the deep pass on a second instance of the embedder (Embedder.twin), freed when
        the run ends, not on the instance searches use: the daemon's long runs at a lowered
        priority (daemon/priority.py). It costs a context's memory while the run lasts (MiniLM
        +41 MB; a decoder's output buffers more: Gemma 270M +596 MB, bench/model_memory.py --twin),
        so it is not kept. `abort`: attached to that second instance only (models/abort.py): set,
        its batch in progress stops mid-decode and the run ends there, like `yield_to`."""
        embedder = self.models.embedder()
        self.background_embedder = embedder.twin(abort) if own_model and embedder is not None else None
        try:
            return self._embed(names, self.background_embedder or embedder, progress=progress, limit=limit,
                               yield_to=yield_to, hint=hint)
        finally:
            if self.background_embedder is not None:
                self.background_embedder.unload()
                self.background_embedder = None

    def _embed(
        self,
        names: list[str] | None,
        embedder: Embedder | None,
        *,
        progress: bool | None,
        limit: int | None,
        yield_to: Callable[[], bool] | None,
        hint: Callable[[], EmbedHint] | None,
    ) -> EmbedReport:
        selected = [c.name for c in self._select(names)]
        vectors = self.vectors
        ids = self.collection_ids(selected)
        static = self.embed_static(ids, progress=progress, yield_to=yield_to)
        deep_off = self.models.deep_off()
        if deep_off is not None and embedder is not None:  # nothing waits for a pass that never runs
            return EmbedReport(static=static, deep_off=deep_off)
        if vectors is None or embedder is None:
            return EmbedReport(pending=sum(self.store.chunk_count(i) for i in ids), static=static)
        if static is not None and static["pending"] and yield_to is not None and yield_to():
            # the static pass stopped for a queued job: the deep one waits behind it too
            return EmbedReport(pending=vectors.pending_count(ids), model=embedder.fingerprint, static=static)
        try:
            report = embed_pending(
                self.store, vectors, embedder, ids, self.embed_lock_path, self.writing,
                progress=progress, limit=limit, yield_to=yield_to,
                priority=lambda: self.embed_priority(hint() if hint is not None else EmbedHint()),
            )  # fmt: skip
        except EmbedBusy as exc:  # the static pass ran all the same: its report goes with the refusal
            exc.static = static
            raise
        report.static = static
        return report

    @property
    def embed_lock_path(self) -> Path:
        """Held by the one deep embedding run on this index (a terminal's `embed` or the daemon's)."""
        return self.settings.state_dir / "embed.lock"

    @property
    def static_lock_path(self) -> Path:
        """Held by the one static pass on this index (static_vectorize.py)."""
        return self.settings.state_dir / "static.lock"

    def pending_vectors(self, names: list[str] | None) -> int | None:
        """Chunks of the collections still waiting for a deep vector (one count in the store);
        None when no deep vectors are kept or made here (no vector store, deep off)."""
        vectors = self.vectors
        if vectors is None or self.models.deep_off() is not None:
            return None
        ids = self.collection_ids([c.name for c in self._select(names)])
        if vectors.active_model() is None:  # nothing embedded yet: every chunk waits
            return sum(self.store.chunk_count(i) for i in ids)
        return vectors.pending_count(ids)

    def static_tier(self) -> StaticTier | None:
        """The static tier when this index keeps it and the embedder has one (None otherwise)."""
        store, model = self.backend.static, self.models.static()
        return None if store is None or model is None else StaticTier(model, store)

    def embed_static(
        self, ids: list[int], *, progress: bool | None = None, yield_to: Callable[[], bool] | None = None
    ) -> dict[str, Any] | None:
        """The static pass over the collections, before the deep one (static_vectorize.py): every
        chunk gets a vector in minutes. None when the tier is unavailable (static_tier)."""
        tier = self.static_tier()
        if tier is None:
            return None
        report = static_pending(self.store, tier.vectors, tier.model, ids, self.static_lock_path,
                                self.writing, progress=progress, yield_to=yield_to)
        return report.as_dict()

    def embed_priority(self, hint: EmbedHint) -> EmbedPriority:
        """The hint's names as the index's ids (a collection removed since is left out)."""
        ids = {name: self.store.collection_id(name) for name in {hint.current, *hint.returned} if name}
        returned = {
            (collection_id, path): count
            for name, counts in hint.returned.items()
            if (collection_id := ids.get(name)) is not None
            for path, count in counts.items()
        }
        return EmbedPriority.now(ids.get(hint.current) if hint.current else None, returned)

    def why_no_embedding(self) -> str:
        """Why this index and these models cannot embed, for `embed`'s one-line error."""
        if self.backend.vectors is None:
            return self.backend.no_vectors
        return str(self.models.status()["roles"]["embed"].get("reason", "no embedding model configured"))

    def static_status(self) -> dict[str, Any]:
        """The static tier's coverage of this home's collections (chunks with a vector of their
        current text, of all), or why it is unavailable."""
        store = self.backend.static
        if store is None:
            return {"available": False, "reason": "not kept by this index"}
        if not self.models.enabled("static"):
            return {"available": False, "reason": "switched off (models: {static: off})"}
        if self.models.embedder() is None:
            return {"available": False, "reason": "no embedding model (the tier is distilled from it)"}
        if self.models.static() is None:
            return {"available": False, "reason": self.models.static_error() or "not built"}
        mine = self.collection_ids(self.config().listed())
        covered, chunks = store.coverage(mine) if mine else (0, 0)  # [] would count every collection
        return {"available": True, "model": store.active_model(), "vectors": covered, "chunks": chunks}

    def status(self) -> dict[str, Any]:
        vectors = self.vectors
        active = vectors.active_model() if vectors else None
        skipped = read_skipped(self.settings.state_dir)
        static = self.backend.static
        stats = self.store.collection_stats()
        listed = self.collections()
        refused = self.refused_collections()
        removing = self.config().removing()
        homes = self.backend.homes.listings() if self.backend.homes is not None else {}
        # the totals are this home's collections (a set-aside one still is); a shared index's
        # others are its `server` line
        here = {*listed, *refused}
        chunks = sum(row["chunks"] for row in stats if row["name"] in here)
        listed_ids = self.collection_ids(list(here))
        deep_off = self.models.deep_off()
        counted = vectors is not None and active is not None and deep_off is None  # else none will come
        everywhere = (vectors.pending_count(listed_ids) if listed_ids else 0) if vectors and counted else None

        def pending(name: str) -> int | None:
            return vectors.pending_count(self.collection_ids([name])) if vectors and counted else None

        return {
            "index": self.backend.location,
            "config": str(self.settings.config_file),
            "sqlite_vec": self.store.supports_vectors,  # (pgvector on PostgreSQL)
            "no_vectors": self.backend.no_vectors if self.backend.vectors is None else None,
            "vectors": {
                "model": active[0] if active else None,
                "dim": active[1] if active else None,
                "pending": everywhere,
                "embedded": chunks - everywhere if everywhere is not None else 0,
                "chunks": chunks,
                "off": deep_off,  # why the deep pass never runs; None when it does
                "running": held_by(self.embed_lock_path),  # the pid of the run embedding now
                # vectors of deleted chunks, for identical ones that come back (store/kept_vectors.py)
                "kept": vectors.kept_count() if vectors is not None and active is not None else 0,
            },
            "static_vectors": self.static_status(),
            # the whole shared index, every home's collections (None: one home's index, SQLite)
            "server": {
                "collections": len(stats),
                "chunks": sum(row["chunks"] for row in stats),
                "others": sum(row["name"] not in here for row in stats),
            }
            if self.backend.homes is not None
            else None,
            "models": self.models.status(),
            # rerank scores and expansions answered before: the same question and chunk are not
            # asked of the model again, even when the model itself is not loaded in this process
            "llm_cache": {"entries": self.backend.llm_cache.entries()},
            "collections": [
                {
                    **row,
                    # written by another version's chunker or rules: the next update re-reads it
                    "index_current": row["index_format"] == INDEX_FORMAT,
                    # not in this home's index.yml: on a shared (PostgreSQL) index, another home's
                    "listed": (mine := listed.get(row["name"])) is not None or row["name"] in refused,
                    # this home's folder of it moved or deleted: no update reaches it, its index
                    # stays as it was. The row's root is the last updater's, another machine's
                    # path on a shared index: "gone" there advised removing the team's collection
                    "folder_gone": mine is not None and not folder_there(mine.path),
                    # listed, but left out for a mask today's rules refuse: the line with its fix
                    "refused": refused[row["name"]].message if row["name"] in refused else None,
                    # a `collection remove` cut short: unlisted, its rows left for the next update
                    "removing": row["name"] in removing,
                    # files the last walk left out, by reason (too_large, binary, unreadable, ...)
                    "skipped": skipped.get(row["name"], {}),
                    "pending_vectors": (waiting := pending(row["name"])),
                    # the deep model's coverage: the current repository's climbs first (pending_order)
                    "with_vectors": row["chunks"] - waiting if waiting is not None else None,
                    "static_vectors": static.coverage(self.collection_ids([row["name"]]))[0]
                    if static is not None
                    else None,
                    # a shared index: the homes listing it (this one first); stale ones keep no rows
                    "homes": [_listing_json(home) for home in homes.get(row["name"], [])],
                    "indexed": True,
                }
                for row in stats
            ]
            + self._unindexed_status(listed, {row["name"] for row in stats}),
        }

    @staticmethod
    def _unindexed_status(listed: dict[str, CollectionConfig], indexed: set[str]) -> list[dict[str, Any]]:
        """Listed collections the index holds nothing of yet (`collection add --no-update`, an
        add or a first search indexing it now, an add stopped by Ctrl-C): status left them out,
        while `collection list` showed them with files=0."""
        return [
            {"name": name, "root": str(config.path), "updated_at": None, "files": 0, "chunks": 0,
             "index_format": None, "index_current": True, "listed": True,
             "folder_gone": not folder_there(config.path), "refused": None, "removing": False,
             "skipped": {}, "pending_vectors": None, "with_vectors": None, "static_vectors": None,
             "homes": [], "indexed": False}
            for name, config in sorted(listed.items())
            if name not in indexed
        ]

    def indexed_paths(self, name: str) -> list[str]:
        collection_id = self.store.collection_id(name)
        return [] if collection_id is None else self.store.indexed_paths(collection_id)

    def read_indexed_text(self, name: str, path: str) -> str:
        collection_id = self.store.collection_id(name)
        text = None if collection_id is None else self.store.file_text(collection_id, path)
        if text is None:
            raise UsageError(f"'{path}' is not indexed in collection '{name}'")
        return text

    # -- search --------------------------------------------------------------------------------

    def on_disk(self) -> dict[str, CollectionConfig]:
        """The collections whose folder is there. One moved or deleted keeps its index (`update`
        and `status` name it) but is searched only by name: its hits would name files that are gone,
        beside the same files' hits from the collection the folder's new place registered. One
        behind a folder this user cannot enter is left out too (its files cannot be checked)."""
        return {name: c for name, c in self.collections().items() if os.path.isdir(c.path)}

    def search_scope(self, names: list[str] | None, home: CollectionConfig | None = None) -> list[str]:
        """Named collections; else `home` (the collection of the folder the search is made from)
        with those included by default; else those included by default, else all (on disk)."""
        if names:
            return [c.name for c in self._select(names)]
        known = self.on_disk()
        default = [n for n, c in known.items() if c.include_by_default]
        if home is not None:
            # another checkout of the home's repository (its main one, a sibling worktree, a
            # separate clone or a fork: the same root commits) holds the same files at another
            # version: beside the checkout an agent searches, its hits were each file twice, half
            # of them in a checkout the agent is not working in. The home as index.yml has it now:
            # its first update, after the caller read it, recorded its roots
            home = known.get(home.name, home)
            mine = _git_folder_of(home)
            return [home.name, *(
                n for n in default
                if n != home.name
                and (mine is None or _git_folder_of(known[n]) != mine)
                and (not home.root_commits or known[n].root_commits != home.root_commits)
            )]
        return default or list(known)

    def search(
        self,
        query: str,
        collections: list[str] | None = None,
        limit: int = 10,
        options: SearchOptions | None = None,
        trace: SearchTrace | None = None,
    ) -> list[Hit]:
        options = replace(options or SearchOptions(), limit=limit)
        scope = self.search_scope(collections)
        ids = self.collection_ids(scope)
        deep_off = self.models.deep_off()
        if deep_off is not None and trace is not None:
            trace.deep_off = deep_off
        deep = options.vectors and deep_off is None  # off: the static list stands in (pipeline)
        models = SearchModels(
            vectors=self.vectors if deep else None,
            embedder=self.models.embedder() if deep else None,
            expander=self.models.expander() if options.expand else None,
            reranker=self.models.reranker() if options.rerank else None,
            static=self.static_tier() if options.vectors else None,
        )
        hits = run_search(self.store, query, ids, options, models, trace)
        if not hits:
            self._still_listed(scope)
        return hits

    def _still_listed(self, names: list[str]) -> None:
        """An empty answer from collections one of which was removed meanwhile says so: `remove`
        unlists a collection before deleting its rows, so a search that found them gone finds it
        unlisted here (UnknownCollectionError), where it answered [] as if nothing matched."""
        listed = self.collections()
        gone = [name for name in names if name not in listed]
        self.refuse_if_named(gone)
        if gone:
            raise UnknownCollectionError(
                f"collection '{gone[0]}' was removed while this search ran (see `qmd-daemon collection list`)"
            )
