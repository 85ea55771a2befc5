"""Background refresh and embed jobs.

Jobs run one at a time on a dedicated writer thread with their own Engine (their own SQLite
connection), so the searcher's connection is never held by a write: WAL lets searches read the last
committed index while a refresh transaction is open. Identical jobs that are still queued merge.
A refresh skips the collections whose roots the watcher saw no change under since their last
finished refresh (vouch.py). While no job has come for IDLE_MERGE_SECONDS, the writer thread merges
the index's FTS5 segments one bounded step at a time (Engine.merge_step), so an update never pays a
whole merge and a daemon's index is merged soon after its edits stop. An embed job skipped
because another process (a terminal's `qmd-daemon embed`) held the embedding lock is owed: the
lock is tried every EMBED_RECHECK_SECONDS while the queue is idle, and the embed job submitted
again once it is free, so what that run left (chunks written after its last look, collections it
was not asked for) does not wait for the next edit. The same holds for the static pass: one skipped
because another process was pooling static vectors (static.lock) is owed too, and the retry waits
until neither lock is held, so the static tier does not stay partial until the next edit. A skipped
job's `pending` is the real number of chunks waiting for deep vectors (the store counts them), not 0.
A long embed job at a lowered priority (daemon/priority.py) does not even finish its batch when
other work queues: its second model instance's decode is stopped mid-graph (models/abort.py), the
chunks the batch finished are kept and the rest redone when the job resumes, so an edit's refresh
waits milliseconds, not a niced batch's seconds on a busy machine.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from qmd_daemon import progress, secret_mask
from qmd_daemon.daemon import priority
from qmd_daemon.daemon.vouch import RefreshPlan, RefreshVouch, Watch
from qmd_daemon.engine import Engine
from qmd_daemon.errors import QmdError
from qmd_daemon.locks import held_by, holder_pid
from qmd_daemon.models.abort import AbortFlag
from qmd_daemon.settings import DEFAULT_EMBED_PRIORITY
from qmd_daemon.vectorize import BATCH, EmbedBusy, EmbedHint, EmbedReport

log = logging.getLogger("qmd_daemon.jobs")
# An embed job with fewer chunks waiting (an edit's: seconds of work) runs at the normal priority
# on the model searches use; a longer one at the lowered priority on a second instance.
LOWERED_FROM = 8 * BATCH

KINDS = ("refresh", "embed")
# Why a job was asked for, for the clients' wording of a slow answer (ai-search's notice): a
# collection registered by this request and read for the first time, one an older version indexed
# and re-read after an upgrade, or changes to take in. A merged job keeps the most telling.
REASONS = ("changes", "upgrade", "new")
# Seconds without a job before the idle merge steps begin: an agent's edits come in bursts, and a
# step (~0.1 s at 500k chunks) holds the writer that the next refresh waits for.
IDLE_MERGE_SECONDS = 5.0
# Seconds between two tries of the embedding lock while a skipped embed job is owed: each try is a
# non-blocking lock attempt on one file, and a run that ends is followed within this long.
EMBED_RECHECK_SECONDS = 3.0
_ids = itertools.count(1)


@dataclass
class Job:
    kind: str
    names: tuple[str, ...] | None  # None: every collection
    reason: str = "changes"  # one of REASONS
    id: str = field(default_factory=lambda: f"job-{next(_ids)}")
    state: str = "queued"  # queued | running | done | failed
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    started_mono: float | None = None  # time.monotonic() at start: compared with the watcher's
    finished_at: float | None = None
    result: Any = None
    error: dict[str, str] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def covers(self, name: str) -> bool:
        return self.names is None or name in self.names

    def as_dict(self) -> dict[str, Any]:
        """The job as /health, /status, /jobs and a search's `refresh_error` show it: its error
        and result (a collection's refresh error line) masked (secret_mask), the one place every
        job leaves the daemon through."""
        return {
            "id": self.id,
            "kind": self.kind,
            "collections": list(self.names) if self.names is not None else None,
            "reason": self.reason,
            "state": self.state,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            # only these two can carry a driver's message: masking the names too turned a
            # collection named like a short password into `***`
            "result": secret_mask.mask_json(self.result),
            "error": secret_mask.mask_json(self.error),
        }

    async def wait(self, timeout: float | None) -> bool:
        """True when the job finished within `timeout` seconds (0: do not wait)."""
        if self.done.is_set():
            return True
        if timeout is not None and timeout <= 0:
            return False
        try:
            await asyncio.wait_for(self.done.wait(), timeout)
        except TimeoutError:
            return False
        return True


@dataclass
class EmbedRetry:
    """An embed job skipped because another process held the embedding lock: owed until the lock
    is free (then submitted again) or an embed job that ran covers its collections."""

    names: tuple[str, ...] | None  # None: every collection
    holder: int | None  # the pid holding the lock when last tried
    since: float = field(default_factory=time.time)  # the first skip
    passes: set[str] = field(default_factory=lambda: {"deep"})  # the passes skipped: deep, static

    def add(self, names: tuple[str, ...] | None, holder: int | None, passes: set[str]) -> None:
        self.names = None if names is None or self.names is None else tuple(sorted({*self.names, *names}))
        self.holder = holder
        self.passes |= passes

    def covered_by(self, names: tuple[str, ...] | None) -> bool:
        """An embed job of `names` ran: True when nothing is owed any more."""
        if names is None:
            return True
        if self.names is None:
            return False
        self.names = tuple(n for n in self.names if n not in names)
        return not self.names

    def as_dict(self) -> dict[str, Any]:
        return {"collections": list(self.names) if self.names is not None else None,
                "waiting_for_pid": self.holder, "since": self.since, "passes": sorted(self.passes),
                "recheck_seconds": EMBED_RECHECK_SECONDS}


class JobQueue:
    def __init__(
        self,
        engine: Engine,
        *,
        auto_embed: bool = True,
        on_finished: Callable[[Job], None] | None = None,
        watches: Callable[[tuple[str, ...] | None], dict[str, Watch]] | None = None,
        embed_hint: Callable[[], EmbedHint] | None = None,
    ):
        """`watches(names)`: called on the loop as a refresh starts, the watcher's standing for
        those collections' roots (None: no watcher, every refresh walks). `embed_hint`: asked from
        the writer thread as an embed job goes, which collection and files to embed first."""
        self.engine = engine
        self.embed_hint = embed_hint
        self.auto_embed = auto_embed
        self.on_finished = on_finished
        self.watches = watches
        self._vouch = RefreshVouch()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="qmd-writer")
        self._queue: deque[Job] = deque()
        self._wakeup = asyncio.Event()
        self._running: Job | None = None
        self._recent: deque[Job] = deque(maxlen=50)
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._merge_due = True  # the index may hold segments to merge: at start, after a refresh
        self._embed_retry: EmbedRetry | None = None
        self._retry_task: asyncio.Task[None] | None = None
        self._writer_thread: int | None = None  # the writer's thread id: its pass is in progress.live
        self._embed_rate: float | None = None  # deep chunks/s of the last embed run that measured it
        self.embed_priority = _configured_level(engine.settings.embed_priority)
        self._embed_applied: str | None = None  # the priority the last embed job ran at
        # set when other work queues behind an embed job: its second instance's decode stops
        self._abort = AbortFlag()

    # -- submission ----------------------------------------------------------------------------

    def submit(
        self, kind: str, names: list[str] | tuple[str, ...] | None = None, reason: str = "changes"
    ) -> Job:
        """Queue a job (or merge it into an identical queued one); a lowered embed job running
        stops its batch mid-decode if this job is one it yields to (_should_pause)."""
        job = self._enqueue(kind, names, reason)
        if self._should_pause():
            self._abort.set()
        return job

    def _enqueue(self, kind: str, names: list[str] | tuple[str, ...] | None, reason: str) -> Job:
        if kind not in KINDS or reason not in REASONS:
            raise ValueError(f"unknown job kind {kind!r} or reason {reason!r}")
        key = tuple(sorted(set(names))) if names else None
        for job in self._queue:
            if job.kind == kind and job.names == key:
                job.reason = max(job.reason, reason, key=REASONS.index)
                return job
            if kind == "embed" == job.kind:
                # one embed job for every collection waiting: its order (the most recent request's
                # collection first, engine.embed's hint) then decides, not the order jobs came in
                job.names = None if key is None or job.names is None else tuple(sorted({*job.names, *key}))
                return job
        job = Job(kind=kind, names=key, reason=reason)
        self._queue.append(job)
        self._wakeup.set()
        return job

    def get(self, job_id: str) -> Job | None:
        for job in (*self._queue, *([self._running] if self._running else []), *self._recent):
            if job.id == job_id:
                return job
        return None

    @property
    def idle(self) -> bool:
        return self._running is None and not self._queue

    def busy_for(self, name: str, kinds: tuple[str, ...] = ("refresh",)) -> bool:
        """A job of `kinds` covering `name` is queued or running."""
        active = [*self._queue, *([self._running] if self._running else [])]
        return any(j.kind in kinds and j.covers(name) for j in active)

    def latest(self, kind: str, name: str) -> Job | None:
        """The job of `kind` covering `name` that will finish last (queued, else running), if any:
        jobs run in order, so waiting for it waits for all of them."""
        for job in reversed(self._queue):
            if job.kind == kind and job.covers(name):
                return job
        running = self._running
        return running if running is not None and running.kind == kind and running.covers(name) else None

    def activity(self) -> dict[str, Any]:
        """What the writer is doing, cheaply (no index read: /health answers it): the running job
        (kind, collections, reason) and an owed embed, for a client's wording of a slow answer and
        `status`'s line about a skipped embed."""
        running = self._running.as_dict() if self._running else None
        if running is not None:
            running["progress"] = self.progress()
        return {
            "running": running,
            "queued": len(self._queue),
            "embed_retry": self._embed_retry.as_dict() if self._embed_retry is not None else None,
            "embed_rate": self.embed_rate(),
            # the CPU priority the last (or running) embed job got: `nice 19`, `idle`, `off (why)`
            "embed_priority": self._embed_applied,
        }

    def progress(self) -> dict[str, Any] | None:
        """The pass the running job is in now (`step`: indexing names the collection; `done` of
        `total` `unit`s, `seconds` since the pass began), from progress.live; None between passes."""
        counted = progress.live(self._writer_thread) if self._running is not None else None
        return counted.as_dict() if counted is not None else None

    def embed_rate(self) -> float | None:
        """Deep chunks embedded per second: the running pass's once it has a few batches behind it,
        else the last run's; None before any was measured (the clients then give no estimate)."""
        counted = progress.live(self._writer_thread) if self._running is not None else None
        if counted is not None and counted.step == "embedding":
            seconds = time.monotonic() - counted.started
            if counted.done >= 2 * BATCH and seconds > 1.0:
                return round(counted.done / seconds, 3)
        return self._embed_rate

    def embedding(self, name: str) -> bool:
        """An embed job covering `name` is queued or running: its chunks get vectors without asking."""
        owed = self._embed_retry
        if self.busy_for(name, ("embed",)):
            return True
        return owed is not None and (owed.names is None or name in owed.names)

    def snapshot(self) -> dict[str, Any]:
        return {
            "running": self._running.as_dict() if self._running else None,
            "queued": [j.as_dict() for j in self._queue],
            "recent": [j.as_dict() for j in list(self._recent)[-10:]],
            # a skipped embed job, submitted again once the other run lets go of the lock
            "embed_retry": self._embed_retry.as_dict() if self._embed_retry is not None else None,
        }

    # -- running -------------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._worker(), name="qmd-jobs")

    async def _worker(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._closing:
            if not self._queue:
                await self._idle()
                continue
            job = self._queue.popleft()
            self._running = job
            job.state, job.started_mono = "running", time.monotonic()
            job.started_at = job.started_at or time.time()  # a yielded embed job: its first start
            plan: RefreshPlan | None = None
            requeued = False
            try:
                if job.kind == "refresh" and self.watches is not None:
                    plan = self._vouch.plan(self.watches(job.names))
                result = await loop.run_in_executor(self._executor, self._run, job, plan)
                requeued = self._yielded(job, result)
                job.state = "queued" if requeued else "done"
            except QmdError as exc:
                job.state, job.error = "failed", {"code": "job_failed", "message": str(exc)}
            except Exception as exc:  # noqa: BLE001 - a failed job must not stop the queue
                log.exception("job %s failed", job.id)
                job.state, job.error = (
                    "failed",
                    {"code": "job_failed", "message": f"{type(exc).__name__}: {exc}"},
                )
            finally:
                if plan is not None:
                    self._vouch.settle(plan, ok=job.state == "done")
                self._running = None
                finished = time.time()
                if not requeued:
                    job.finished_at = finished
                    self._recent.append(job)
                    job.done.set()
            if requeued:
                continue
            skipped = job.result.get("skipped") if job.result else None
            static_busy = job.kind == "embed" and _static_busy(job.result)
            skipped = skipped or ("the static pass: another process is pooling static vectors"
                                  if static_busy else None)
            why = job.error["message"] if job.error else skipped  # for daemon.log's reader
            log.info(
                "%s %s %s in %.2fs%s%s",
                job.kind,
                job.names or "all",
                "skipped" if skipped else job.state,
                finished - (job.started_at or finished),
                f": {why}" if why else "",
                "; retried once it lets go" if skipped else "",
            )
            if job.kind == "refresh":
                self._merge_due = True
            if job.kind == "embed" and job.state == "done":
                self._settle_embed(job, skipped is not None, static_busy)
            reports = job.result.get("reports", []) if job.state == "done" and job.kind == "refresh" else []
            if any(r.get("touched") for r in reports) and self.auto_embed:
                # every collection, not only the touched one: an embed job cut short by a stop
                # left others waiting, and one job's order (the current collection first,
                # engine.embed's hint) serves them all
                self.submit("embed", None)
            if self.on_finished is not None:
                try:
                    self.on_finished(job)
                except Exception:  # noqa: BLE001
                    log.exception("job callback failed")

    def _settle_embed(self, job: Job, skipped: bool, static_busy: bool) -> None:
        """A skipped embed job (its deep pass, or its static pass: another process held that
        pass's lock) is owed and the locks watched for; one that ran whole pays what it covers."""
        if not skipped:
            if self._embed_retry is not None and self._embed_retry.covered_by(job.names):
                self._embed_retry = None
            return
        passes = ({"deep"} if job.result.get("skipped") else set()) | ({"static"} if static_busy else set())
        holder = job.result.get("held_by") if "deep" in passes else job.result["static"].get("held_by")
        if self._embed_retry is not None:
            self._embed_retry.add(job.names, holder, passes)
        else:
            self._embed_retry = EmbedRetry(job.names, holder, passes=passes)
        if self._retry_task is None or self._retry_task.done():
            loop = asyncio.get_running_loop()
            self._retry_task = loop.create_task(self._retry_embed(), name="qmd-embed-retry")

    async def _retry_embed(self) -> None:
        """Try the embedding lock every EMBED_RECHECK_SECONDS while the queue is idle (this
        process's own embed job holds it otherwise); once free, submit the owed embed job."""
        while self._embed_retry is not None and not self._closing:
            await asyncio.sleep(EMBED_RECHECK_SECONDS)
            retry = self._embed_retry
            if retry is None or self._closing or not self.idle:
                continue
            holder = held_by(self.engine.static_lock_path)
            holder = held_by(self.engine.embed_lock_path) if holder is None else holder
            if holder is not None:
                retry.holder = holder
                continue
            self._embed_retry = None
            self.submit("embed", retry.names)

    def _yielded(self, job: Job, result: dict[str, Any]) -> bool:
        """An embed job that stopped to let a job queued behind it run (a refresh of a file just
        edited: 833 chunks took 4 minutes on a loaded 2-core box, and the edit was invisible that
        long) goes back in the queue, behind it, with what it did so far; its waiters keep
        waiting for the whole job. False: the job is finished (`result` is its result)."""
        if job.kind == "embed" and job.result is not None:
            for key in ("embedded", "copied", "seconds", "aborted"):
                result[key] = round(result[key] + job.result[key], 3)
        job.result = result
        waiting = self._other_waiting() or self._current_embed_waiting()
        if job.kind != "embed" or result.get("skipped") or not waiting or self._closing:
            return False  # a skipped job is owed instead (_settle_embed): requeued, it would skip again
        static = result.get("static") or {}
        if not result["pending"] and (not static.get("pending") or static.get("busy")):
            return False  # nothing left for either pass (a static pass that stopped for the queued job is)
        self._queue.append(job)
        return True

    def _should_pause(self) -> bool:
        """Asked by a running embed job after each batch: stop there for a queued job, or for the
        daemon's shutdown (`qmd-daemon stop` took 11 s on a fresh install: close() waited its 10 s
        for the first embedding of a repository, then left it to be rolled back)."""
        return self._closing or self._other_waiting() or self._current_embed_waiting()

    def _current_embed_waiting(self) -> bool:
        """An embed job is queued for the collection of the most recent request (the hint's
        `current`: a search in another repository found its chunks waiting) and the running one
        does not cover it: the running job stops after its batch and waits behind it, so the
        repository in use is not held up by another's whole embedding (libuv's 5,000 chunks kept
        click waiting). The queued job covers the current collection, so it never yields back."""
        running = self._running
        if running is None or running.kind != "embed" or running.names is None or self.embed_hint is None:
            return False
        current = self.embed_hint().current
        if current is None or current in running.names:
            return False
        return any(queued.kind == "embed" and queued.covers(current) for queued in tuple(self._queue))

    def _other_waiting(self) -> bool:
        """A job other than an embed one is queued. Also asked from the writer thread between
        batches: tuple() copies the deque in one step under the GIL, where iterating it could
        meet an append. Not another embed job: two would hand the writer to each other batch by
        batch."""
        return any(queued.kind != "embed" for queued in tuple(self._queue))

    async def _idle(self) -> None:
        """Wait for a job; once none has come for IDLE_MERGE_SECONDS, run merge steps on the
        writer thread until nothing is left to merge or a job comes (it waits one step at most)."""
        self._wakeup.clear()
        if not self._merge_due:
            await self._wakeup.wait()
            return
        try:
            await asyncio.wait_for(self._wakeup.wait(), IDLE_MERGE_SECONDS)
            return
        except TimeoutError:
            pass
        loop = asyncio.get_running_loop()
        while self._merge_due and not self._queue and not self._closing:
            self._merge_due = await loop.run_in_executor(self._executor, self._merge_step)

    def _merge_step(self) -> bool:
        try:
            return self.engine.merge_step()
        except QmdError as exc:  # the writer lock given up at shutdown, an index that cannot be written
            log.info("segments not merged: %s", exc)
            return False
        except Exception:  # noqa: BLE001 - upkeep must not stop the queue; the next refresh retries
            log.exception("merging the index's segments failed")
            return False

    def _run(self, job: Job, plan: RefreshPlan | None) -> dict[str, Any]:
        self._writer_thread = threading.get_ident()
        names = list(job.names) if job.names is not None else None
        if job.kind == "refresh":
            reports = []
            unchanged = plan.unchanged if plan is not None else None
            # every collection: one whose folder is gone (moved, deleted) must not stop the others
            every = names is None
            for report in self.engine.update(names, progress=False, unchanged=unchanged, keep_going=every):
                if report.error is not None:
                    log.warning("not refreshed: %s", report.error)
                if report.forgotten is not None:
                    log.info("%s", report.forgotten)
                data = report.as_dict()
                data["touched"] = report.touched
                reports.append(data)
            # not walked: the watcher saw nothing change under them since their last refresh
            return {"reports": reports, "vouched": plan.skipped if plan is not None else []}
        try:
            # a long run on a thread of its own at a lower priority, with a model instance of its
            # own: the user's work goes first, and a search never waits for a decode slowed by it
            level = self._embed_level(names)
            self._abort.clear()
            if self._should_pause():  # queued before the clear: submit() set it for this job
                self._abort.set()
            embedded = priority.run_lowered(level, lambda: self._embed(names, level != priority.OFF),
                                            self._embed_started)
        except EmbedBusy as exc:  # a terminal's `qmd-daemon embed`: it embeds these chunks too
            pid = holder_pid(self.engine.embed_lock_path)
            # the chunks still waiting, counted (never a 0 that reads as "nothing waits"); the
            # static pass ran before the deep one was refused, so its report is in the exception
            # every count _yielded sums (a job put back behind a refresh resumes into this skip)
            return {"embedded": 0, "copied": 0, "seconds": 0.0, "aborted": 0,
                    "pending": self.engine.pending_vectors(names),
                    "skipped": f"{exc} (pid {pid})", "held_by": pid, "static": exc.static}
        if embedded.embedded >= 2 * BATCH and embedded.seconds > 1.0:
            self._embed_rate = round(embedded.embedded / embedded.seconds, 3)
        return {**embedded.as_dict(), "priority": self._embed_applied}

    def _embed_started(self, applied: str) -> None:
        """On the thread the embed job runs on (daemon/priority.py), as it starts: its pass is the
        one /health reports, and what priority it got is in the job's result."""
        self._writer_thread = threading.get_ident()
        self._embed_applied = applied

    def _embed_level(self, names: list[str] | None) -> str:
        """The configured level, or off where it cannot help: on a GPU the run barely uses the
        CPU, and a second model instance would take the GPU's memory twice; a few chunks (an
        edit's) are seconds of work, not worth loading a second instance for."""
        if self.embed_priority == priority.OFF or not priority.supported():
            return self.embed_priority
        if self.engine.models.device != "cpu":
            return priority.OFF
        waiting = self.engine.pending_vectors(names)
        return self.embed_priority if waiting is None or waiting >= LOWERED_FROM else priority.OFF

    def _embed(self, names: list[str] | None, own_model: bool) -> EmbedReport:
        # the abort flag goes to the second instance only: the shared one's decodes are searches' too
        return self.engine.embed(names, progress=False, yield_to=self._should_pause, hint=self.embed_hint,
                                 own_model=own_model, abort=self._abort)

    async def close(self, timeout: float = 10.0) -> bool:
        """Stop taking jobs, wait up to `timeout` for the running one; True when the writer is free."""
        self._closing = True
        self._abort.set()  # a lowered embed job's batch stops now, not after its niced decodes
        if self._retry_task is not None:
            self._retry_task.cancel()
        self.engine.stop_waiting.set()  # a job queued on another process's writer lock gives up
        self._wakeup.set()
        for job in self._queue:
            job.state, job.error = "failed", {"code": "shutting_down", "message": "the daemon is stopping"}
            job.done.set()
        self._queue.clear()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout)
            except TimeoutError:
                log.warning(
                    "a %s job is still running at shutdown; its transaction will roll back",
                    self._running.kind if self._running else "?",
                )
                self._executor.shutdown(wait=False, cancel_futures=True)
                return False
        self._executor.shutdown(wait=True)
        return True


def _configured_level(configured: str) -> str:
    """The embed job's priority level from QMD_EMBED_PRIORITY; an unreadable value is said once in
    daemon.log and the default kept (a typo must not stop the daemon)."""
    level = priority.parse_level(configured)
    if level is None:
        log.warning("QMD_EMBED_PRIORITY=%r is not off, idle or a nice value 1-19; using %s",
                    configured, DEFAULT_EMBED_PRIORITY)
        return priority.parse_level(DEFAULT_EMBED_PRIORITY) or priority.OFF
    return level


def _static_busy(result: dict[str, Any] | None) -> bool:
    """The embed job's static pass found another process pooling (static_vectorize's `busy`)."""
    static = (result or {}).get("static")
    return bool(static and static.get("busy"))
