"""`qmd-warm [--repo DIR]`: make the daemon warm for this repository, in the background.

Started (detached) by the SessionStart hooks. It re-launches itself detached and exits 0 at once;
the detached copy takes a per-repository lock (so two sessions do not index twice), starts the
daemon when absent, asks it to refresh and embed the repository and follows the jobs to the end,
logging to the log folder (warm.log). It always exits 0: a hook must never fail a session.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

if False:  # annotations only: importing typing costs ~5 ms on every call
    from typing import Any

if __package__:
    from . import _qmd_client as qc
else:  # run as a file: its folder is sys.path[0]
    import importlib

    qc = importlib.import_module("_qmd_client")

LOCK_STALE_S = 60.0  # the holder touches its lock at least this often
POLL_S = 2.0


def _on_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (OSError, ValueError):
        return False


def _log(message: str) -> None:
    """A line in warm.log and, for a user who ran qmd-warm by hand, on the terminal: a hook's
    stderr and the detached copy's are log files, so they print nothing (a hand run printed
    nothing either, `qmd-warm --repo /nonexistent` included)."""
    if _on_terminal():
        line = message if message.startswith("qmd-warm") else f"qmd-warm: {message}"
        print(line, file=sys.stderr, flush=True)
    try:
        handle = qc.log_file("warm.log")
        try:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            handle.write(f"{stamp} [{os.getpid()}] {message}\n".encode())
        finally:
            handle.close()
    except OSError:
        pass


def _lock_path(root: str) -> str:
    import hashlib

    key = hashlib.sha1(os.fsencode(root)).hexdigest()[:16]
    return os.path.join(qc.private_dir(os.path.join(qc.state_dir(), "warm")), key + ".lock")


def take_lock(root: str) -> str | None:
    """The lock file's path when we hold it; None when a live warm (fresh lock) holds it."""
    path = _lock_path(root)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.write(fd, f"{os.getpid()} {root}".encode())
            os.close(fd)
            return path
        except FileExistsError:
            try:
                if time.time() - os.path.getmtime(path) < LOCK_STALE_S:
                    return None
                os.unlink(path)  # its holder died
            except OSError:
                pass
    return None


def _touch(path: str) -> None:
    with contextlib.suppress(OSError):
        os.utime(path)


def warm(root: str, is_git: bool, timeout: float) -> None:
    lock = take_lock(root)
    if lock is None:
        _log(f"{root}: another qmd-warm is already warming it")
        return
    try:
        signature = qc.repo_signature(root) if is_git else None
        try:
            state = qc.ensure_daemon(timeout=60.0)
        except qc.DaemonBackingOff as exc:  # a daemon started now would crash as well
            _log(f"{root}: not warming: {exc}")
            return
        try:
            reply = qc.http(state, "POST", "/refresh", {"path": root, "embed": True, "wait": 0})
        except qc.DaemonError as exc:
            if exc.code != "config_error":
                raise
            # the user's index.yml refuses this warm (a bad value, a collection set aside): its
            # one line, what they fix, not a failure of the hook
            _log(f"{root}: {exc.message}")
            return
        jobs: list[dict[str, Any]] = reply.get("jobs", [])
        _log(f"{root}: collection {reply.get('collection')}; jobs {', '.join(j['id'] for j in jobs)}")
        deadline = time.monotonic() + timeout
        final: dict[str, dict[str, Any]] = {}
        while jobs and time.monotonic() < deadline:
            for job in jobs:
                if job["id"] not in final:
                    try:
                        current = qc.http(state, "GET", f"/jobs/{job['id']}", timeout=30)
                    except qc.DaemonUnavailable:
                        # stopped, or replaced after an upgrade: its jobs went with it (an error
                        # line read as if the warm had broken something)
                        _log(f"{root}: the daemon (pid {state.get('pid')}) stopped before these jobs "
                             "finished; the next search or session picks them up")
                        return
                    if current.get("state") in ("done", "failed"):
                        final[job["id"]] = current
            if len(final) == len(jobs):
                break
            _touch(lock)
            time.sleep(POLL_S)
        for job in jobs:
            done = final.get(job["id"])
            if done is None:
                _log(f"{root}: {job['kind']} still running after {timeout:g}s; leaving it to the daemon")
                continue
            _log(f"{root}: {done['kind']} {done['state']}: {done.get('error') or done.get('result')}")
            if done["kind"] == "refresh" and done["state"] == "done":
                qc.write_stamp(root, signature)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)


def main(argv: list[str] | None = None) -> int:
    try:
        parser = argparse.ArgumentParser(prog="qmd-warm", description="Warm qmd-daemon for a repository.")
        parser.add_argument("--repo", help="repository folder (default: the current folder)")
        parser.add_argument("--foreground", action="store_true", help="do the work here instead of detaching")
        parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to follow the jobs")
        args = parser.parse_args(argv)
        start = qc.start_folder(args.repo)
        if start is None:
            _log(f"qmd-warm: {qc.FOLDER_GONE}")
            return 0
        root, is_git = qc.repo_root(start)
        if not args.foreground:
            me = [sys.executable, "-m", "clients.qmd_warm"] if __package__ else [sys.executable, __file__]
            qc.spawn_detached(
                [*me, "--foreground", "--repo", root, "--timeout", str(args.timeout)], "warm.log"
            )
            if _on_terminal():
                log = os.path.join(qc.log_dir(), "warm.log")
                print(f"qmd-warm: warming {root} in the background; {log} says how it went", file=sys.stderr)
            return 0
        warm(root, is_git, args.timeout)
    except SystemExit:
        return 0
    except BaseException as exc:  # noqa: BLE001 - a hook must never fail a session
        _log(f"qmd-warm failed: {type(exc).__name__}: {exc}")
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
