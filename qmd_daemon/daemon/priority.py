"""The daemon's background embedding at a lower CPU priority than the user's work and its searches.

Why a thread of its own: on Linux the nice value and the scheduling policy belong to a thread, and
a thread inherits them from the thread that creates it. llama.cpp's CPU backend (an OpenMP build:
libgomp) runs a decode on the calling thread plus a worker pool that libgomp keeps per calling
thread, created by it on its first parallel region and ended when it exits (bench/embed_nice.py's
probe reads both from /proc). So an embed job run on a fresh thread whose priority is lowered
first computes entirely at that priority, and its workers die with it; a search's query embedding,
on the reader thread, keeps its own pool at the normal priority. The lowered priority is never put
on the long-lived writer thread: an unprivileged thread cannot raise its priority again
(RLIMIT_NICE is 0 for users), and the writer also runs the refreshes a search waits for.

The level (`QMD_EMBED_PRIORITY`, Settings.embed_priority; nice 19 by default): `off`, a nice
value 1-19, or `idle` (SCHED_IDLE: only CPU time nothing else wants). A niced decode beside a build
runs slowly, so the job queue stops it mid-graph when other work queues (models/abort.py).
I/O follows: without an explicit I/O class Linux derives a thread's I/O priority from its nice
value (BFQ/CFQ), and SCHED_IDLE threads get the idle I/O class. Elsewhere (macOS, Windows) nothing
is changed: `os.setpriority` there acts on the whole process, the searches included.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

OFF = "off"
IDLE = "idle"


def parse_level(text: str) -> str | None:
    """`off`, `idle` or a nice value `1`..`19` as the setting's canonical text; None: not a level."""
    word = text.strip().lower()
    if word in (OFF, "0", "no", "false"):
        return OFF
    if word == IDLE:
        return IDLE
    if word.isdigit() and 1 <= int(word) <= 19:
        return str(int(word))
    return None


def supported() -> bool:
    """Per-thread priorities: Linux only (elsewhere they would slow the daemon's searches too)."""
    return sys.platform.startswith("linux") and hasattr(os, "sched_setscheduler")


def lower_this_thread(level: str) -> str:
    """Lower the calling thread's CPU priority to `level`; what was applied (`nice 19`, `idle`,
    `off`, or why nothing was). Never raised back: the thread is meant to end with its work."""
    if level == OFF:
        return OFF
    if not supported():
        return f"off ({sys.platform}: no per-thread priority)"
    tid = threading.get_native_id()
    try:
        if level == IDLE:
            os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
            return IDLE
        os.setpriority(os.PRIO_PROCESS, tid, max(int(level), os.getpriority(os.PRIO_PROCESS, tid)))
    except OSError as exc:  # a sandbox refusing the call: embed at the normal priority
        return f"off ({exc.strerror})"
    return f"nice {os.getpriority(os.PRIO_PROCESS, tid)}"


def run_lowered(level: str, work: Callable[[], T], on_start: Callable[[str], None] | None = None) -> T:
    """`work()` on a new thread at `level` (the caller waits for it, and gets its result or its
    exception); `on_start(applied)` runs first on that thread. With `off` or where priorities are
    not per thread, `work()` runs on the calling thread as it is."""
    if level == OFF or not supported():
        if on_start is not None:
            on_start(lower_this_thread(level))
        return work()
    out: list[T] = []
    failed: list[BaseException] = []

    def body() -> None:
        try:
            applied = lower_this_thread(level)
            if on_start is not None:
                on_start(applied)
            out.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
            failed.append(exc)

    thread = threading.Thread(target=body, name="qmd-embed", daemon=True)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return out[0]
