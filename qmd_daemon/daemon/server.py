"""The aiohttp server: token and Host guards, the endpoints, the idle timer and the lifetime.

Threads: one reader thread owns the searching Engine (its SQLite connection and the models), one
writer thread owns a second Engine for refresh/embed jobs (jobs.py). Both share one ModelSet, and
each model has its own lock, so a search's query embedding and a background embedding batch take
turns on the model while the event loop stays free.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import hmac
import json
import logging
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web

from clients._qmd_client import MAX_REQUEST_BYTES
from qmd_daemon import __version__, secret_mask
from qmd_daemon.atomic_files import replace_file
from qmd_daemon.daemon import api
from qmd_daemon.daemon.hit_counts import HitCounts
from qmd_daemon.daemon.jobs import Job, JobQueue
from qmd_daemon.daemon.state import (
    LOADED_CODE,
    NONCE,
    DaemonState,
    LifetimeLock,
    daemon_proof,
    probe_health,
    read_state,
    remove_state,
    write_state,
)
from qmd_daemon.daemon.vouch import WHOLE_TREE, Watch, spec_of
from qmd_daemon.daemon.watcher import RootSpec, RootWatcher
from qmd_daemon.engine import Engine
from qmd_daemon.errors import (
    IndexDatabaseError,
    QmdError,
    RequestError,
    UnknownCollectionError,
    internal_line,
)
from qmd_daemon.locks import LockBusy, held_or_busy
from qmd_daemon.search.pipeline import SearchTrace
from qmd_daemon.settings import Settings
from qmd_daemon.store.backends import mask_configured
from qmd_daemon.store.connection import index_error, quick_check, upgrade_lock_path
from qmd_daemon.store.schema import SCHEMA_VERSION, upgraded_past_this_code
from qmd_daemon.vectorize import EmbedHint

log = logging.getLogger("qmd_daemon.server")

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
OPEN_PATHS = frozenset({"/challenge"})  # answered without the token: the client asks it first
T = TypeVar("T")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_STATUS_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}
OPEN_WAIT_S = 5.0  # at start, for the index to open before listening
# The start-up quick_check reads the whole index (1.9 GB at 503k chunks: 12-14 s, 8 s of CPU, beside
# the first searches, which it slowed from 1.3 to 1.7-2.2 s): once a day, not at every start.
INDEX_CHECK_INTERVAL_S = 24 * 3600
INDEX_CHECK_RECORD = "index-check.json"  # in the state folder: which index was found sound, when
SEARCH_DEADLINE_S = 25.0  # per trip to the reader; under the clients' 30 s, so they get the reason
READER_CLOSE_S = 10.0  # at exit, for a reader still inside a request
# The shortest idle exit: QMD_IDLE_MINUTES=0 stopped a daemon the moment it listened, so the client
# that started it never got its answer (it waited out its start timeout, then searched in-process);
# this leaves a client's health check and its request, a few ms apart, to one daemon
MIN_IDLE_S = 2.0
# How often the daemon looks at its state file (a read of 300 bytes), to write it again when it is
# gone or names another token: under the clients' start timeout (20 s) and the 2 s a client gives a
# daemon that does not prove it holds the file's token (LOCK_LET_GO_S) before it searches in-process
STATE_CHECK_S = 1.0


def in_daemon_thread(fn: Callable[[], T]) -> asyncio.Future[T]:
    """`fn` on a daemon thread of its own: unlike the loop's executor, a thread stuck inside SQLite
    can then hold neither the loop's shutdown nor the interpreter's exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():  # cancelled meanwhile
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def run() -> None:
        value: T | BaseException
        try:
            ok, value = True, fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            ok, value = False, exc
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            loop.call_soon_threadsafe(settle, ok, value)

    threading.Thread(target=run, name="qmd-index-check", daemon=True).start()
    return future


def error_response(status: int, code: str, message: str) -> web.Response:
    """Every error body the daemon answers, its message masked (secret_mask): a 500's
    `Type: message` or an error's own line may quote a connection string."""
    return web.json_response({"error": {"code": code, "message": secret_mask.mask(message)}}, status=status)


def split_host(value: str) -> tuple[str, str | None]:
    """'127.0.0.1:8080' -> ('127.0.0.1', '8080'); '[::1]:80' -> ('[::1]', '80')."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        rest = value[end + 1 :]
        if rest and not rest.startswith(":"):
            return value, None
        return value[: end + 1], rest[1:] if rest else None
    name, sep, port = value.partition(":")
    return name, port if sep else None


class Daemon:
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.monotonic,
        idle_minutes: float | None = None,
        watch: bool = True,
        auto_embed: bool = True,
        preload: bool = False,
        check_interval: float = 30.0,
        write_state_file: bool = True,
        search_deadline_s: float = SEARCH_DEADLINE_S,
    ):
        self.settings = settings
        self.clock = clock
        minutes = settings.idle_minutes if idle_minutes is None else idle_minutes
        self.idle_seconds = max(MIN_IDLE_S, float(minutes) * 60.0)
        self.check_interval = check_interval
        self.write_state_file = write_state_file
        self.preload = preload
        self.search_deadline_s = search_deadline_s
        self.index_problem: str | None = None  # set when the start-up check finds the index damaged
        self.token = secrets.token_urlsafe(32)
        self._token_bytes = self.token.encode()
        self.started_at = time.time()
        self.code = LOADED_CODE  # the code it runs, as it was on disk (DaemonState.code)
        self.port = 0
        self.stop_reason: str | None = None
        self.reader = Engine(settings)
        self.writer = Engine(settings)
        self._reader_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="qmd-reader")
        self.watcher = RootWatcher(self._on_files_changed, settings.excludes) if watch else None
        self.hit_counts = HitCounts(settings.state_dir)
        self._current: str | None = None  # the collection of the most recent request: embedded first
        self.jobs = JobQueue(
            self.writer,
            auto_embed=auto_embed,
            on_finished=self._job_finished,
            watches=self._watches if watch else None,
            embed_hint=lambda: EmbedHint(self._current, self.hit_counts.returned()),
        )
        self._root_names: dict[Path, list[str]] = {}  # watched root -> its collections
        self._refreshed: dict[str, float] = {}  # collection -> monotonic start of its last good refresh
        self._embed_resumed: set[str] = set()  # collections a search asked to embed (_resume_embedding)
        self._outdated: set[str] = set()  # indexed by an older version, not yet re-read (_refresh_outdated)
        self._last_activity = clock()
        self._inflight = 0
        self._searches = 0  # /search requests being answered (waiting for a refresh or running)
        self._stop = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._idle_task: asyncio.Task[None] | None = None
        self._state_task: asyncio.Task[None] | None = None  # _keep_state_file
        self._background: set[asyncio.Task[Any]] = set()
        self._index_check: asyncio.Future[None] | None = None  # the start-up quick_check's thread
        self._closed = False
        self.writer_abandoned = False  # a job was still running at exit (its work rolls back)
        self.reader_abandoned = False  # a request was still computing at exit

    # -- plumbing ------------------------------------------------------------------------------

    async def _read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn` on the reader thread (the searching engine is used from that thread only)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reader_pool, lambda: fn(*args, **kwargs))

    async def _read_for_request(self, fn: Callable[[], T]) -> T:
        """`_read` with the request's deadline: past it the client gets a 503 that says why, not a
        hang. The reader thread cannot be interrupted: it finishes that step, then takes the next."""
        try:
            return await asyncio.wait_for(self._read(fn), self.search_deadline_s)
        except TimeoutError:
            raise RequestError(503, "timeout", self._deadline_reason()) from None

    def _upgrading(self) -> bool:
        """Whether a process (this one's reader included) holds the index's upgrade lock; the file
        a process killed mid-upgrade left behind is not held."""
        path = upgrade_lock_path(self.settings.index_path)
        if not path.exists():
            return False
        try:
            with held_or_busy(path, LockBusy("upgrading")):
                return False
        except LockBusy:
            return True

    def _deadline_reason(self) -> str:
        """Why the reader did not answer in time: after an upgrade, the index's schema steps (a few
        minutes on a big index) rather than an earlier request."""
        late = f"no answer within {self.search_deadline_s:g} s"
        if self._upgrading():
            return (
                f"{late}: the index is being brought up to date after an upgrade (once; a few "
                "minutes on a big index, see daemon.log); try again then"
            )
        return f"{late}: the daemon is still computing an earlier request; try again"

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def touch(self) -> None:
        self._last_activity = self.clock()

    def idle_remaining(self) -> float:
        return self.idle_seconds - (self.clock() - self._last_activity)

    @property
    def state(self) -> DaemonState:
        return DaemonState(
            port=self.port, token=self.token, pid=os.getpid(), version=__version__,
            started_at=self.started_at,
            schema=SCHEMA_VERSION,
            code=self.code,
        )

    # -- guards --------------------------------------------------------------------------------

    def host_allowed(self, host: str | None) -> bool:
        if not host:
            return False
        name, port = split_host(host)
        return name in LOOPBACK_NAMES and (port is None or port == str(self.port))

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None:
            return True
        scheme, sep, rest = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and self.host_allowed(rest.split("/", 1)[0])

    def token_ok(self, request: web.Request) -> bool:
        given = ""
        auth = request.headers.get("Authorization", "")
        if auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        elif "X-QMD-Token" in request.headers:
            given = request.headers["X-QMD-Token"].strip()
        return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), self._token_bytes)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self.host_allowed(request.headers.get("Host")) or not self.origin_allowed(
            request.headers.get("Origin")
        ):
            return error_response(403, "forbidden_host", "requests must address 127.0.0.1 or localhost")
        if request.path in OPEN_PATHS:
            return await handler(request)  # no token, and it does not keep an idle daemon awake
        if not self.token_ok(request):
            return error_response(401, "unauthorized", "missing or wrong token (see the daemon state file)")
        if self.index_problem is not None and request.path not in ("/health", "/shutdown"):
            return error_response(503, "index_damaged", self.index_problem)
        searching = request.path == "/search"
        self._inflight += 1
        self._searches += searching
        self.touch()
        try:
            return await handler(request)
        except web.HTTPException as exc:
            code = _STATUS_CODES.get(exc.status, "http_error")
            return error_response(exc.status, code, exc.reason)
        except QmdError as exc:  # each type carries its status and code (errors.py)
            return error_response(exc.http_status, exc.code, str(exc))
        except Exception as exc:  # noqa: BLE001 - every error is JSON
            readable = index_error(exc, self.settings.index_path)  # disk full, a damaged page
            if readable is not None:
                return error_response(503, "index_error", str(readable))
            log.exception("%s %s failed", request.method, request.path)
            return error_response(500, "internal", internal_line(exc))
        finally:
            self._inflight -= 1
            self._searches -= searching
            self.touch()

    # -- app -----------------------------------------------------------------------------------

    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware], client_max_size=MAX_REQUEST_BYTES)
        app.router.add_get("/challenge", self.challenge)
        app.router.add_get("/health", self.health)
        app.router.add_post("/search", self.search)
        app.router.add_post("/refresh", self.refresh)
        app.router.add_post("/embed", self.embed)
        app.router.add_get("/status", self.status)
        app.router.add_get("/jobs/{id}", self.job)
        app.router.add_post("/shutdown", self.shutdown)
        return app

    @staticmethod
    async def _body(request: web.Request) -> dict[str, Any]:
        raw = await request.read()
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise RequestError(400, "bad_request", "the body is not valid JSON") from None
        except RecursionError:
            raise RequestError(400, "bad_request", "the body is nested too deeply") from None
        if not isinstance(body, dict):
            raise RequestError(400, "bad_request", "the body must be a JSON object")
        return body

    # -- endpoints -----------------------------------------------------------------------------

    async def challenge(self, request: web.Request) -> web.Response:
        """Prove to a client that this is the daemon of the state file before it sends the token
        (state.daemon_proof); reveals nothing else and accepts nothing."""
        nonce = request.query.get("nonce", "")
        if not NONCE.fullmatch(nonce):
            return error_response(400, "bad_request", "'nonce' must be 32 to 128 lowercase hex digits")
        return web.json_response({"proof": daemon_proof(self.token, self.port, nonce)})

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "ok": True,
                "pid": os.getpid(),
                "version": __version__,
                "schema": SCHEMA_VERSION,
                "port": self.port,
                "uptime_s": round(time.time() - self.started_at, 3),
                # what the writer is doing (no index read): ai-search words a slow answer by it,
                # `status` names an embed owed to another process's lock
                "jobs": self.jobs.activity(),
                # and what a search costs when the writer is idle: searches being answered (this
                # one among them), which models a first use still has to load, and on what device
                "searches": self._searches,
                "models": self._models_activity(),
            }
        )

    def _models_activity(self) -> dict[str, Any] | None:
        """Each role's state (`loaded`, `not loaded yet`, `ready`: built, its file not loaded yet,
        `off`, `unavailable`) and the device, read without building or loading anything; None
        before the reader has built its model set (a daemon just started)."""
        models = self.reader.built_models()
        if models is None:
            return None
        status = models.status()
        roles = {role: value["state"] for role, value in status["roles"].items()}
        return {"device": status["device"], "roles": roles}

    def _locate(self, path: Path | None, names: list[str] | None, create: bool) -> tuple[Any, bool]:
        """On the reader thread: the collection covering `path` (registered when `create`), and
        every one of `names` checked to exist; a 404 RequestError otherwise."""
        home, created = (None, False)
        if path is not None:
            home, created = api.resolve_path(self.reader, path, create=create)
            if home is None:
                raise RequestError(404, "not_found", f"no collection covers {path}")
        if names:
            known = self.reader.collections()
            missing = [n for n in names if n not in known]
            if missing:
                self.reader.refuse_if_named(missing)  # one set aside for its mask: its line and fix
                raise UnknownCollectionError.named(missing[0])
        return home, created

    def _refresh_reason(self, names: list[str] | None, created: bool) -> str:
        """Why a search's refresh runs, as the clients word it: a collection registered now (or
        never indexed: api.never_indexed) is read for the first time; one an older version indexed
        (found at start) is re-read until a refresh of it has finished; else changes are taken in."""
        if created:
            return "new"
        return "upgrade" if names and self._outdated.intersection(names) else "changes"

    async def _registered(self, collection: Any) -> None:
        log.info("registered collection %s -> %s", collection.name, collection.path)
        await self._sync_watch()  # watched before its first refresh starts: fresh after it

    async def search(self, request: web.Request) -> web.Response:
        started = time.perf_counter()
        req = api.parse_search(await self._body(request))

        def prepare() -> tuple[Any, bool, bool, list[str], RootSpec | None]:  # one trip to the reader
            home, created = self._locate(None if req.names else req.path, req.names, create=True)
            scope = api.search_scope(self.reader, req.names, home)
            spec = root_specs(self.reader.collections()).get(home.path) if home is not None else None
            return home, created, created or api.never_indexed(self.reader, home), scope, spec

        home, created, new, scope, spec = await self._read_for_request(prepare)
        self._current = home.name if home is not None else scope[0] if len(scope) == 1 else self._current
        if created:
            await self._registered(home)
        refreshed: bool | None = None
        job: Job | None = None
        if req.auto and home is not None and not new:
            # the client left freshness to us: take in every change the kernel has queued (all
            # made before this request) and wait for the refresh they call for; a root we cannot
            # vouch for is refreshed as if the client had asked
            if self._watched(home, spec, flush=True) or self._polled(home, spec):
                job = self.jobs.latest("refresh", home.name)  # a polled root: no rescan per search
            else:
                reason = self._refresh_reason([home.name], False)
                job = self.jobs.submit("refresh", [home.name], reason=reason)
        elif new or req.refresh or req.auto:
            names = [home.name] if home is not None else req.names
            job = self.jobs.submit("refresh", names, reason=self._refresh_reason(names, new))
        if job is not None:
            refreshed = await job.wait(req.wait) and job.state == "done"
        trace = SearchTrace()

        def run() -> tuple[list[str], list[dict[str, Any]], float, dict[str, str]]:
            # again after a refresh: a new checkout's first records its root commits, which decide
            # whether a repository included by default is another checkout of it
            now = api.search_scope(self.reader, req.names, home) if job is not None else scope
            hits, took = api.run_search(self.reader, req, now, trace)
            return now, hits, took, api.roots_of(self.reader, now)

        scope, hits, search_ms, roots = await self._read_for_request(run)
        self.hit_counts.record(hits)
        if trace.pending_vectors:
            self._resume_embedding(scope)
        stale = bool(trace.stale) or any(self.jobs.busy_for(n) for n in scope)
        body: dict[str, Any] = {
            "hits": hits,
            "stale": stale,
            **api.trace_fields(trace),
            "collection": home.name if home is not None else None,
            "collections": scope,
            "roots": roots,
            "created": created,
            "refreshed": refreshed,
            # why that refresh ran (new, upgrade, changes): a first index not finished within the
            # wait is no "edits may be missing" (nothing of the repository is searchable yet)
            "refresh_reason": job.reason if job is not None else None,
            # the root's changes reach the daemon as they happen: the client may leave freshness
            # to it (refresh "auto") instead of running its git check
            "watched": home is not None and (self._watched(home, spec) or self._polled(home, spec)),
            # "polled": watched in part, so rescanned every poll_s (changes in unwatched folders
            # show within that); "watched": every change is in before the answer
            "freshness": None if home is None else self._freshness(home, spec),
            "search_ms": round(search_ms, 3),
            "took_ms": round((time.perf_counter() - started) * 1000, 3),
        }
        if job is not None and job.error:
            body["refresh_error"] = job.as_dict()["error"]  # masked
        if trace.pending_vectors:
            body.update(self._vectors_coming(scope, trace.pending_vectors))
        return web.json_response(body)

    def _vectors_coming(self, scope: list[str], pending: int) -> dict[str, Any]:
        """When the scope's chunks waiting for deep vectors will have them, for the client's line:
        `embedding`, a job of this daemon embeds them (queued, running or owed to another
        process's lock); `vectors_eta_s`, their count over the measured rate (the collection of
        the request goes first, so the rest of the index does not count), None while unmeasured."""
        embedding = any(self.jobs.embedding(n) for n in scope)
        rate = self.jobs.embed_rate() if embedding else None
        return {"embedding": embedding, "vectors_eta_s": round(pending / rate) if rate else None}

    def _resume_embedding(self, names: list[str]) -> None:
        """A search found chunks waiting for vectors that no job embeds: the daemon that was
        embedding them stopped (replaced after an upgrade, `qmd-daemon stop`) and its job went with
        it, and only the next session's hook would ask again, so a session still open kept its
        keyword-only answers. Asked once per collection in a daemon's life: a model that cannot
        load fails one job, not one per search."""
        owed = [n for n in names if n not in self._embed_resumed and not self.jobs.busy_for(n, ("embed",))]
        if owed and self.jobs.auto_embed and not self._closed:
            self._embed_resumed.update(owed)
            self.jobs.submit("embed", None)  # every collection waiting; this one first (the hint)

    async def _jobs_request(self, request: web.Request, kinds: tuple[str, ...]) -> web.Response:
        body = await self._body(request)
        names, path = api.parse_targets(body)
        wait = api._float(body, "wait", 0.0, 0.0, 3600.0)
        create = api._flag(body, "create") is not False
        if kinds == ("refresh",) and api._flag(body, "embed"):  # every field checked before any work
            kinds = ("refresh", "embed")
        home, created = await self._read(self._locate, path, None if path is not None else names, create)
        if home is not None:
            names = [home.name]
        if names and len(names) == 1:
            self._current = names[0]
        if created:
            await self._registered(home)
        reason = "new" if created else "changes"
        jobs = [self.jobs.submit(kind, names, reason=reason) for kind in kinds]
        done = True
        deadline = time.monotonic() + wait
        for job in jobs:
            done = await job.wait(max(0.0, deadline - time.monotonic())) and done
        return web.json_response(
            {
                "collection": home.name if home is not None else None,
                "root": str(home.path) if home is not None else None,
                "created": created,
                "done": done,
                "jobs": [j.as_dict() for j in jobs],
            }
        )

    async def refresh(self, request: web.Request) -> web.Response:
        return await self._jobs_request(request, ("refresh",))

    async def embed(self, request: web.Request) -> web.Response:
        return await self._jobs_request(request, ("embed",))

    async def job(self, request: web.Request) -> web.Response:
        job = self.jobs.get(request.match_info["id"])
        if job is None:
            raise RequestError(404, "not_found", f"no job {request.match_info['id']}")
        return web.json_response(job.as_dict())

    async def status(self, request: web.Request) -> web.Response:
        info = await self._read_for_request(self.reader.status)
        info["version"] = __version__
        info["daemon"] = {
            "pid": os.getpid(),
            "port": self.port,
            "started_at": self.started_at,
            "uptime_s": round(time.time() - self.started_at, 3),
            "idle_minutes": self.idle_seconds / 60.0,
            "idle_exit_in_s": round(max(0.0, self.idle_remaining()), 1),
            "state_file": str(self.settings.state_dir / "daemon.json"),
            "watching": [str(r) for r in self.watcher.roots] if self.watcher else [],
            "watch_backend": self.watcher.backend if self.watcher else None,
            "vouched_for": [str(r) for r in self.watcher.roots if self.watcher.vouches(r)]
            if self.watcher
            else [],
            "watched_folders": len(self.watcher.dirs) if self.watcher else 0,
            "watch_budget": self.watcher.max_dirs if self.watcher else 0,
            # watched in part (more folders than the budget) or on a remote filesystem: rescanned
            # every poll_seconds, their watched folders still reporting at once
            "polled": [str(r) for r in self.watcher.polled] if self.watcher else [],
            "poll_seconds": self.watcher.poll_s if self.watcher else None,
            "watch_error": self.watcher.error if self.watcher else None,
        }
        info["jobs"] = self.jobs.snapshot()
        info["current_collection"] = self._current  # its chunks are embedded first
        return web.json_response(info)

    async def shutdown(self, request: web.Request) -> web.Response:
        asyncio.get_running_loop().call_later(0.05, self.request_stop, "shutdown request")
        return web.json_response({"ok": True, "pid": os.getpid()})

    # -- background: watching, idle, jobs ------------------------------------------------------

    async def _sync_watch(self) -> None:
        if self.watcher is None or self._closed:
            return
        collections = await self._read(self.reader.collections)
        names: dict[Path, list[str]] = {}
        for name, c in collections.items():
            names.setdefault(c.path, []).append(name)
        specs = root_specs(collections)
        self._root_names = names
        await self.watcher.sync(specs)

    def _watched(self, home: Any, spec: RootSpec | None, *, flush: bool = False) -> bool:
        """The watcher sees every change under `home`'s root as it happens, by the rules the root's
        collections have now (`spec`), and a refresh that started after its watch began has
        finished: the index is as fresh as the watcher's news."""
        if self.watcher is None or self._closed:
            return False
        vouched = self.watcher.flush(home.path) if flush else self.watcher.vouches(home.path)
        if self.watcher.spec(home.path) != spec:
            return False  # index.yml changed what the root's collections take since it was listed
        since = self.watcher.since(home.path)
        refreshed = self._refreshed.get(home.name)
        return vouched and since is not None and refreshed is not None and refreshed >= since

    def _polled(self, home: Any, spec: RootSpec | None) -> bool:
        """The watcher rescans `home`'s root every poll_s (watched in part), by the rules it has
        now, and a refresh of it has finished since its watch began."""
        if self.watcher is None or self._closed or not self.watcher.polls(home.path):
            return False
        since = self.watcher.since(home.path)
        refreshed = self._refreshed.get(home.name)
        return self.watcher.spec(home.path) == spec and since is not None and (refreshed or 0.0) >= since

    def _freshness(self, home: Any, spec: RootSpec | None) -> str | None:
        if self._watched(home, spec):
            return "watched"
        return "polled" if self._polled(home, spec) else None

    def _watches(self, names: tuple[str, ...] | None) -> dict[str, Watch]:
        """As a refresh of `names` (None: all) starts: each one's root as the watcher stands for it,
        after taking in every change the kernel has queued (roots it cannot vouch for left out)."""
        watches: dict[str, Watch] = {}
        if self.watcher is None or self._closed:
            return watches
        for root, root_names in self._root_names.items():
            wanted = [n for n in root_names if names is None or n in names]
            if not wanted or not self.watcher.flush(root):
                continue
            mark, spec = self.watcher.mark(root), self.watcher.spec(root)
            if mark is not None and spec is not None:
                watches.update(dict.fromkeys(wanted, Watch(root, mark, spec)))
        return watches

    def _on_files_changed(self, roots: set[Path]) -> None:
        names = [n for root in sorted(roots) for n in self._root_names.get(root, [])]
        if names and not self._closed:
            self.jobs.submit("refresh", names)

    def _job_finished(self, job: Job) -> None:
        if job.kind == "refresh" and job.state == "done":
            self._outdated.difference_update(job.names if job.names is not None else set(self._outdated))
        if job.kind == "refresh" and job.state == "done" and job.started_mono is not None:
            for name in job.names if job.names is not None else list(self._refreshed_names()):
                self._refreshed[name] = max(self._refreshed.get(name, 0.0), job.started_mono)
        if job.kind == "refresh" and not self._closed:
            self._spawn(self._sync_watch())
        if job.state == "failed" and not self._closed:
            self._spawn(self._stop_if_index_upgraded())

    async def _stop_if_index_upgraded(self) -> None:
        """After a failed job: when newer code (a `pip install -U` since this daemon started) has
        upgraded the index, this daemon's writes are refused (store/schema.py), so it stops and
        the next client call starts the new code instead of leaving the index unrefreshed."""
        try:
            version = await self._read(lambda: upgraded_past_this_code(self.settings.index_path))
        except QmdError:
            return
        if version is not None:
            self.request_stop(f"the index was upgraded to schema {version} by a newer qmd-daemon")

    def _refreshed_names(self) -> list[str]:
        return [n for names in self._root_names.values() for n in names]

    async def _idle_loop(self) -> None:
        while not self._stop.is_set():
            self.hit_counts.save()  # a few KB when searches came since the last look
            remaining = self.idle_remaining()
            if remaining <= 0:
                if self._inflight == 0 and self.jobs.idle:
                    self.request_stop(f"idle for {self.idle_seconds / 60:g} minutes")
                    return
                remaining = self.check_interval
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), max(0.01, min(remaining, self.check_interval)))

    async def _keep_state_file(self) -> None:
        """Write the state file again when it is gone, unreadable or names this daemon with another
        token (deleted by hand, a clean-up of the state folder, a bad restore): clients find the
        daemon by it alone, and without it each `ai-search` started a daemon that waited 20 s on
        this one's lock (or, with a wrong token, was told this one "does not answer"), then searched
        in-process, until this one idled out. Another daemon's file is left alone (none runs while
        this one holds the lock)."""
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), STATE_CHECK_S)
            found = read_state(self.settings.state_dir)
            garbled = found is not None and found.pid == os.getpid() and (found.port, found.token) != (
                self.port, self.token)
            if not self._stop.is_set() and (found is None or garbled):
                log.info("the state file was gone or damaged: writing it again")
                with contextlib.suppress(OSError):
                    write_state(self.settings.state_dir, self.state)

    def _share_models(self) -> None:
        self.writer.share_models_with(self.reader)
        self.reader.store  # noqa: B018 - open (and migrate) the index now, not on the first search

    def _preload_models(self) -> None:
        """Load the embedding model and the vectors' codes now so the first search does not pay
        for them (codes: ~1 s a million vectors, store/binary_codes.py)."""
        try:
            embedder = self.reader.models.embedder()
            if embedder is not None:
                embedder.embed_query("warm up")
            if (vectors := self.reader.vectors) is not None:
                vectors.warm()
        except Exception as exc:  # noqa: BLE001 - search degrades to lexical; status says why
            log.warning("could not preload the embedding model or the codes: %s", exc)

    async def _check_index(self) -> None:
        """A damaged index is found at start, beside the first answers (its own connection and
        thread), and every request but /health and /shutdown is then answered with the fix. Not
        again within INDEX_CHECK_INTERVAL_S of a check that found this index sound (a daemon
        starts at every session and after every idle exit; a request that meets damage later
        gets the same one-line fix from the store)."""
        path = self.settings.index_path
        record = self.settings.state_dir / INDEX_CHECK_RECORD
        if _checked_recently(record, path):
            return
        self._index_check = in_daemon_thread(lambda: quick_check(path))
        try:
            await asyncio.shield(self._index_check)  # close() waits for the thread itself
        except IndexDatabaseError as exc:
            self.index_problem = str(exc)
            log.error("%s", exc)
            return
        with contextlib.suppress(OSError):  # unrecorded: the next start checks again
            replace_file(record, json.dumps({"index": str(path), "checked_at": time.time()}))

    async def _refresh_outdated(self) -> None:
        """After an upgrade, re-read in the background the collections an older version indexed:
        a client that saw no file change asks for no refresh, so their old chunks stayed (searches
        answer from them until the new ones land)."""
        try:
            names = await self._read(self.reader.outdated_collections)
        except QmdError as exc:  # a damaged or unreadable index: _check_index reports it
            log.warning("could not list the collections to re-read: %s", exc)
            return
        if names and not self._closed:
            log.info("re-reading %s: indexed by another version", ", ".join(names))
            self._outdated.update(names)
            self.jobs.submit("refresh", names, reason="upgrade")

    async def _resume_vectors(self) -> None:
        """At start, embed what an earlier daemon left: `qmd-daemon stop`, an installer's restart
        or an idle exit cut its embed job short, and a first hour with four repositories saw one
        at 5% after 15 minutes (only the collection searched last was asked for again). One job
        for every collection, the current one first once a request names it (engine.embed's
        hint); it yields to every refresh, and the daemon does not exit idle while it runs. Only
        when the daemon preloads its models (QMD_PRELOAD, on by default): counting needs the
        embedder built, which a daemon told to load nothing at start must not do; there the first
        search that finds chunks waiting asks for the same job (_resume_embedding)."""
        try:
            owed = await self._read(self._vectors_owed)
        except QmdError as exc:  # a damaged or unreadable index: _check_index reports it
            log.warning("could not count the chunks waiting for vectors: %s", exc)
            return
        if owed and self.jobs.auto_embed and not self._closed:
            log.info("resuming the embedding: %d chunks wait for vectors", owed)
            self.jobs.submit("embed", None)

    def _vectors_owed(self) -> int:
        """On the reader: this home's chunks still waiting for a deep vector (or, with the deep
        pass off, a static one), 0 when no embedding model is configured to give them one."""
        if self.reader.models.embedder() is None:  # resolves the file, loads nothing
            return 0
        deep = self.reader.pending_vectors(None)
        if deep is not None:
            return deep
        static = self.reader.static_status()
        return max(0, int(static["chunks"]) - int(static["vectors"])) if static.get("available") else 0

    async def _start_jobs(self) -> None:
        """The jobs a start owes: the re-read of collections an older version indexed, then the
        vectors an earlier daemon did not finish (in that order: vectors of re-read chunks)."""
        await self._refresh_outdated()
        if self.preload:
            await self._resume_vectors()

    # -- lifetime ------------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        opening = asyncio.ensure_future(self._read(self._share_models))
        upgrading = False
        try:  # an index that cannot be opened is refused at start, one line (serve_forever)...
            await asyncio.wait_for(asyncio.shield(opening), OPEN_WAIT_S)
        except TimeoutError:  # ...but its schema steps after an upgrade (minutes) run while it listens
            log.info("the index is being brought up to date after an upgrade; listening meanwhile")
            self._spawn(opening)
            upgrading = True
        self._runner = web.AppRunner(
            self.make_app(), access_log=None, handle_signals=False, shutdown_timeout=15
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        self.jobs.start()
        if upgrading:  # the watch's collections are read on the reader, after the schema steps
            self._spawn(self._sync_watch())
        else:
            await self._sync_watch()
        self.touch()
        self._idle_task = asyncio.get_running_loop().create_task(self._idle_loop(), name="qmd-idle")
        if self.write_state_file:
            write_state(self.settings.state_dir, self.state)
            self._state_task = asyncio.get_running_loop().create_task(
                self._keep_state_file(), name="qmd-state"
            )
        self._spawn(self._check_index())
        self._spawn(self._start_jobs())
        if self.preload:
            self._spawn(self._read(self._preload_models))
        log.info("listening on 127.0.0.1:%d (pid %d)", self.port, os.getpid())
        return self.port

    def request_stop(self, reason: str) -> None:
        if not self._stop.is_set():
            self.stop_reason = reason
            log.info("stopping: %s", reason)
            self._stop.set()

    async def wait_stopped(self) -> None:
        await self._stop.wait()
        await self.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self.write_state_file:
            remove_state(self.settings.state_dir, self.token)
        for task in (self._idle_task, self._state_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.watcher is not None:
            await self.watcher.close()
        if self._runner is not None:
            await self._runner.cleanup()  # stops listening, lets in-flight requests finish
        writer_free = await self.jobs.close(timeout=10.0)
        self.hit_counts.save()
        self.writer_abandoned = not writer_free
        for task in list(self._background):
            task.cancel()
        if self._index_check is not None:
            # the check's read-only connection is not opened or closed while the engines close
            # theirs: a close racing that open hung both threads inside SQLite (seen once in CI)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._index_check), READER_CLOSE_S)
        if writer_free:
            self.writer.close()
        try:
            await asyncio.wait_for(self._read(self.reader.close), READER_CLOSE_S)
        except TimeoutError:
            self.reader_abandoned = True  # still inside a request: the process exits around it
        self._reader_pool.shutdown(wait=not self.reader_abandoned, cancel_futures=True)


async def _serve(settings: Settings, idle_minutes: float | None, out: Callable[[str], None]) -> int:
    daemon = Daemon(settings, idle_minutes=idle_minutes, preload=settings.preload)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, daemon.request_stop, f"signal {sig.name}")
    try:
        port = await daemon.start()
    except BaseException:
        await daemon.close()
        raise
    out(f"qmd-daemon listening on 127.0.0.1:{port} (pid {os.getpid()})")
    await daemon.wait_stopped()
    out(f"qmd-daemon stopped ({daemon.stop_reason})")
    if daemon.writer_abandoned or daemon.reader_abandoned:
        # neither thread can be interrupted and the interpreter would wait for them at exit; the
        # writer's open transaction rolls back (embedding resumes from its last committed batch)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def root_specs(collections: dict[str, Any]) -> dict[Path, RootSpec]:
    """What the collections take under each root; two on one root: the union (anything counts)."""
    specs: dict[Path, RootSpec] = {}
    for c in collections.values():
        specs[c.path] = spec_of(c) if c.path not in specs else WHOLE_TREE
    return specs


def _running(state_dir: Path) -> DaemonState | None:
    state = read_state(state_dir)
    return state if state is not None and probe_health(state, timeout=2.0) is not None else None


def serve_forever(
    settings: Settings | None = None,
    *,
    idle_minutes: float | None = None,
    out: Callable[[str], None] | None = None,
    wait_for_other: float = 20.0,
) -> int:
    """`qmd-daemon serve`: run until idle, /shutdown or SIGTERM. A healthy daemon already running
    makes this a no-op (prints its port, returns 0); a stale state file is replaced."""
    settings = settings or Settings.from_env()

    def say(line: str) -> None:
        (out or print)(line)
        sys.stdout.flush()

    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    mask_configured(settings)  # a logged traceback of a database error keeps its password out
    # A fatal signal (a CUDA build of llama.cpp once crashed every daemon with SIGSEGV at its first
    # model load) leaves the Python stack on stderr, the daemon.log of a daemon a client started:
    # the crash's only record otherwise is the client's broken reply.
    faulthandler.enable()
    lock = LifetimeLock(settings.state_dir)
    if not lock.try_acquire():
        # another daemon: starting (it answers soon) or stopping (an idle exit, a kill: it lets go
        # of the lock, and this one takes over instead of giving up after the wait)
        deadline = time.monotonic() + wait_for_other
        while True:
            state = _running(settings.state_dir)
            if state is not None:
                say(f"qmd-daemon already running on 127.0.0.1:{state.port} (pid {state.pid})")
                return 0
            if lock.try_acquire():
                break
            if time.monotonic() >= deadline:
                said = f"qmd-daemon: error: another daemon holds {lock.path} but does not answer"
                print(said, file=sys.stderr)
                return 1
    try:
        # holding the lifetime lock, no other daemon of this home lives: any state file is stale
        # (and its port may now belong to anyone, so it is not even asked)
        if read_state(settings.state_dir) is not None:
            log.info("replacing a stale state file")
            remove_state(settings.state_dir)
        return asyncio.run(_serve(settings, idle_minutes, say))
    except QmdError as exc:  # an index that cannot be opened: one line, not a traceback
        print(f"qmd-daemon: error: {exc}", file=sys.stderr)
        return 1
    finally:
        lock.release()


def _checked_recently(record: Path, index: Path) -> bool:
    try:
        seen = json.loads(record.read_text(encoding="utf-8"))
        age = time.time() - float(seen["checked_at"])
        return seen["index"] == str(index) and 0 <= age < INDEX_CHECK_INTERVAL_S
    except (OSError, ValueError, KeyError, TypeError):
        return False
