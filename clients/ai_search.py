"""`ai-search "question"`: ask the warm qmd-daemon about the repository you are in.

Standard library only, so it starts in a few tens of milliseconds. It resolves the git top level
of --repo (default: the current folder) to its `repo-<name>` collection (registered on first use),
and searches it together with the collections included by default. Freshness: when the daemon
said last time that it watches the root (inotify; it then takes in every change made before the
request), the client leaves it to the daemon (refresh "auto"); otherwise it asks for a refresh
when `git ls-files` and the files' sizes and mtimes say something changed since the last one.
With no daemon it starts one (detached) and waits for it; when none can be used it searches in a
one-off process instead.

Output: a JSON list of {path, line, end_line, score, snippet, collection}, best first, paths
relative to the repository; a table when stdout is a terminal; `[]` when nothing matches.
"""

from __future__ import annotations

import _thread
import json
import os
import sys

if False:  # annotations only: importing typing costs ms on every call (_parser imports argparse)
    import argparse
    from collections.abc import Callable
    from typing import Any

if __package__:
    from . import _qmd_client as qc
else:  # run as a file (python clients/ai_search.py): its folder is sys.path[0]
    qc = __import__("_qmd_client")  # not importlib.import_module: importing importlib costs ~1 ms

PROG = "ai-search"
OUTPUT_KEYS = ("path", "line", "end_line", "score", "snippet", "collection")
SLOW_NOTICE_S = 3.0  # a warm answer takes well under a second; past this the user hears why it waits
# then, while the call still waits, the line again this often when it says something new (a first
# index of 33k chunks took 13 s and said nothing after its notice at 3 s: a wait without progress)
PROGRESS_EVERY_S = 5.0


def _parser() -> argparse.ArgumentParser:
    import argparse

    p = argparse.ArgumentParser(
        prog=PROG,
        description="Search the current repository with qmd-daemon.",
        # a fixed width: the default asks shutil for the terminal size, and shutil costs ~5 ms
        formatter_class=lambda prog: argparse.HelpFormatter(prog, width=100),
    )
    p.add_argument(
        "query", nargs="+",
        help="what to look for (words, identifiers, a question); - reads it from stdin (a bug report,"
        " a traceback: no shell quoting)",
    )
    p.add_argument("--json", action="store_true", help="JSON even on a terminal")
    p.add_argument("-n", "--limit", type=int, default=10, help="number of results (default 10)")
    p.add_argument("-c", "--collection", action="append", help="search this collection instead (repeatable)")
    p.add_argument("--repo", help="repository folder (default: the current folder)")
    p.add_argument(
        "--path",
        action="append",
        help="only files matching this gitignore pattern, relative to the repository ('src/', '*.py';"
        " '!tests/' leaves out; repeatable)",
    )
    p.add_argument(
        "--min-score", type=float, default=None, help="leave out results scoring below this (0-1, default 0)"
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="stop adding results past this many tokens (default 8000, 0: no limit)",
    )
    p.add_argument(
        "--rerank",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="rerank the top results with the model (default: off)",
    )
    p.add_argument(
        "--wait", type=float, default=60.0, help="seconds to wait for a pending refresh (default 60)"
    )
    p.add_argument("--no-daemon", action="store_true", help="search in-process, without the daemon")
    return p


def _fail(message: str, code: int = 1) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return code


def _request(args: argparse.Namespace, query: str, root: str, refresh: bool | str) -> dict[str, Any]:
    return qc.search_body(
        query, args.limit, refresh, args.wait, root, args.collection, args.path,
        min_score=args.min_score, max_tokens=args.max_tokens, rerank=args.rerank,
    )


class SlowNotice:
    """Says on stderr what a call is waiting for when it takes longer than `after` seconds: a
    first search in a large repository indexes it (up to --wait), and a silent minute reads as
    a hang to a user and to an agent alike. `message`: the line, or a function asked for it only
    then (what the daemon reports it is doing at that moment). `every`: asked again this often
    while the call waits, and printed when it says something new (files indexed so far), so a
    long wait shows progress; None: once. Never once the call is over: the
    answer can arrive while the function asks the daemon (up to a second), and a line after the
    results said the call was still waiting. `_thread`, not `threading`: it is loaded at start,
    while importing threading costs the warm path ~0.7 ms."""

    def __init__(self, after: float, message: str | Callable[[], str], every: float | None = None):
        self._after, self._message, self._every = after, message, every
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._over = False  # set by __exit__ under _gate: the watcher prints only while it is False
        self._gate = _thread.allocate_lock()
        self._finished = _thread.allocate_lock()  # released when the watcher ends (join)
        self._finished.acquire()

    def _watch(self) -> None:
        try:
            wait, said = self._after, None
            while not self._done.acquire(timeout=wait):
                message = self._message if isinstance(self._message, str) else self._message()
                with self._gate:
                    if self._over:
                        return
                    if message != said:
                        print(f"{PROG}: {message}", file=sys.stderr, flush=True)
                said = message
                if self._every is None:
                    return
                wait = self._every
        finally:
            self._finished.release()

    def __enter__(self) -> SlowNotice:
        _thread.start_new_thread(self._watch, ())
        return self

    def __exit__(self, *_: object) -> None:
        with self._gate:  # a notice being printed now finishes first; none is printed after
            self._over = True
        self._done.release()

    def join(self, timeout: float = -1) -> bool:
        """Wait until the watcher has ended, so nothing more can print (True when it has)."""
        return self._finished.acquire(timeout=timeout)


def _within(wait: float) -> str:
    return f"results come within about {wait:g} s, --wait changes it"


def catching_up(root: str, wait: float, why: str = "a first search in a large repository indexes it") -> str:
    """The slow-call notice when nobody says what the wait is for (no daemon asked, or one too old
    to say)."""
    return f"waiting for the index of {root} to catch up ({why}; {_within(wait)})"


def waiting_line(
    root: str, wait: float, *, refresh: bool | str, collection: bool, daemon: bool, rerank: bool = False
) -> str:
    """ai-search's 3-second notice: what the call waits for, asked only then (a warm call never
    pays for the question). In-process (--no-daemon) the search itself indexes the repository; a
    daemon says what its writer or the search does, and while none answers yet it is starting."""
    indexes = bool(refresh) and not collection
    if not daemon:
        return catching_up(root, wait) if indexes else "waiting for the search to finish"
    doing = daemon_doing(root, wait, refresh=bool(refresh), rerank=rerank)
    if doing is not None:
        return doing
    if indexes:
        return catching_up(root, wait, "a daemon starting loads its models first")
    return "waiting for the daemon to start (it loads its models first)"


def daemon_doing(root: str, wait: float, *, refresh: bool = True, rerank: bool = False) -> str | None:
    """What the daemon says it is doing (/health, one quick request), worded for the slow-call
    notice: re-reading an index after an upgrade is not indexing a repository for the first time,
    nor taking in a few edits; with its writer idle (or a call that waits for no refresh) the wait
    is the search itself (searching_line). A daemon of a version before `jobs` (left running
    across an upgrade) gets the wording that covers every wait. None when no daemon answers (it
    is starting)."""
    state = qc.read_state()
    try:
        health = qc.http(state, "GET", "/health", timeout=1.0) if state else None
    except (qc.DaemonUnavailable, qc.DaemonError, OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(health, dict):
        return None
    jobs = health.get("jobs")
    if not isinstance(jobs, dict):  # an older daemon's /health: it does not say
        return catching_up(root, wait) if refresh else "waiting for the search to finish"
    running = jobs.get("running") or {}
    within = "; ".join(filter(None, [progress_of(running.get("progress")), _within(wait)]))
    names = ", ".join(running.get("collections") or []) or "every collection"
    if refresh and running.get("kind") == "refresh":
        doing = {
            "new": f"the daemon is indexing {root} for the first time",
            "upgrade": f"the daemon is re-reading the index of {names} after an upgrade (an older version"
            " indexed it; searches meanwhile answer from the old chunks)",
        }.get(str(running.get("reason")), f"the daemon is taking in recent changes to {names}")
        return f"{doing} ({within})"
    if refresh and jobs.get("queued"):  # this call's refresh waits behind the running job
        if running.get("kind") == "embed":
            return f"the daemon is finishing a batch of embedding before it refreshes {root} ({within})"
        return f"the daemon has {jobs['queued']} jobs queued before this search's refresh ({within})"
    return searching_line(health, rerank)


def progress_of(counted: Any) -> str | None:
    """The running job's pass as /health reports it (progress.live on the daemon's writer):
    `1,234 of 5,012 files read`, `96 of 833 chunks embedded`; None when it says nothing usable."""
    if not isinstance(counted, dict):
        return None
    done, total, unit = counted.get("done"), counted.get("total"), counted.get("unit")
    if not isinstance(done, int) or not isinstance(total, int) or total <= 0 or not isinstance(unit, str):
        return None
    step, unit = str(counted.get("step")), unit.strip()
    did = {"embedding": "embedded", "static vectors": "given static vectors", "distilling": "distilled",
           "counting words": "counted"}
    plural = unit if total == 1 or unit.endswith("s") else f"{unit}s"
    return f"{min(done, total):,} of {total:,} {plural} {did.get(step, 'read')}"


def searching_line(health: dict[str, Any], rerank: bool) -> str:
    """The notice when no refresh holds the call up: the wait is the search, and /health says
    what makes it slow: a model's first use loads it (seconds), reranking on a CPU takes seconds,
    other searches share the daemon's one reader. It said "waiting for the daemon's answer (0 jobs
    queued)", which told the user nothing."""
    steps = []
    others = health.get("searches")
    if isinstance(others, int) and others > 1:  # this search is one of them
        steps.append(f"{others - 1} other search{'es' if others > 2 else ''} at the same time")
    models = health.get("models")
    if "models" in health and not isinstance(models, dict):  # the daemon has not built them yet
        steps.append("loading its models for the first query")
    roles = (models.get("roles") if isinstance(models, dict) else None) or {}
    used = [("embed", "embedding")] + ([("rerank", "reranking")] if rerank else [])
    for role, what in used:
        if roles.get(role) in ("not loaded yet", "ready"):
            steps.append(f"loading the {what} model for its first query")
    if rerank and roles.get("rerank") not in ("off", "unavailable"):
        on_cpu = isinstance(models, dict) and models.get("device") == "cpu"
        steps.append("reranking the top results" + (" on the CPU (seconds; leave out --rerank to skip it)"
                                                    if on_cpu else ""))
    # a job that does not hold this call up still shares the cores (and the embedding model,
    # whose next decode the query's vector takes first): "nothing holds it up" was said then too
    jobs = health.get("jobs")
    running = (jobs.get("running") or {}) if isinstance(jobs, dict) else {}
    beside = {"embed": "an embedding batch runs beside it", "refresh": "a refresh runs beside it"}
    if isinstance(running, dict) and running.get("kind") in beside:
        steps.append(beside[str(running["kind"])])
    detail = "; ".join(steps) if steps else "no indexing or embedding holds it up"
    return f"the daemon is running the search ({detail})"


def shape(response: dict[str, Any], root: str) -> list[dict[str, Any]]:
    """Hits with paths relative to the repository (absolute when outside it)."""
    roots = response.get("roots") or {}
    out = []
    for hit in response.get("hits") or []:
        base = roots.get(hit.get("collection"))
        path = hit.get("path", "")
        if base:
            full = os.path.join(base, path)
            path = os.path.relpath(full, root) if full.startswith(root + os.sep) else full
        row = {k: hit.get(k) for k in OUTPUT_KEYS}
        row["path"] = path
        out.append(row)
    return out


def _table(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("no results")
    for row in rows:
        print(f"{row['score']:.2f}  {row['path']}:{row['line']}-{row['end_line']}")
        # a notebook's snippet lines after its first are not consecutive lines of its JSON file
        notebook = str(row["path"]).lower().endswith(".ipynb")
        for offset, text in enumerate(str(row["snippet"]).split("\n")[:6]):
            number = "" if offset and notebook else row["line"] + offset
            print(f"      {number:>5} | {text}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    if args.query == [qc.STDIN_QUERY]:
        try:
            query = qc.query_from_stdin().strip()
        except ValueError as exc:
            return _fail(str(exc), 2)
    else:
        query = " ".join(args.query).strip()
    if not query:
        return _fail("empty query", 2)
    if not 1 <= args.limit <= 200:
        return _fail("--limit must be between 1 and 200", 2)
    # the daemon's bounds (daemon/api.py), checked before a daemon is started for them; a NaN
    # fails every comparison, so it is refused too
    if not 0 <= args.wait <= 3600:
        return _fail("--wait must be between 0 and 3600 seconds", 2)
    if args.min_score is not None and not 0 <= args.min_score <= 1:
        return _fail("--min-score must be between 0 and 1", 2)
    if args.max_tokens is not None and not 0 <= args.max_tokens <= 1_000_000:
        return _fail("--max-tokens must be between 0 and 1000000 (0: no limit)", 2)
    start = qc.start_folder(args.repo)
    if start is None:
        return _fail(qc.FOLDER_GONE, 2)
    if not os.path.isdir(start):  # a typo in --repo is no file either: say which
        return _fail(f"{start} {'is not a folder' if os.path.lexists(start) else 'does not exist'}", 2)
    root, is_git = qc.repo_root(start)
    refresh, signature, stamp = qc.freshness(root, is_git, bool(args.collection))
    body = _request(args, query, root, refresh)
    # Outside git only a folder registered by `collection add` is searched, and most such calls
    # are a mistake: a running daemon answers, but none is started (loading the models, then idle
    # for QMD_IDLE_MINUTES) only to say the folder is not a collection: the one-off process says it
    starts_daemon = is_git or bool(args.collection)
    daemon = not args.no_daemon and qc.daemon_allowed()
    def waiting() -> str:
        return waiting_line(
            root, args.wait, refresh=refresh, collection=bool(args.collection), daemon=daemon,
            rerank=bool(args.rerank),
        )

    try:
        with SlowNotice(SLOW_NOTICE_S, waiting, every=PROGRESS_EVERY_S):
            response = qc.daemon_or_fallback(
                body, args.wait + 60, daemon=daemon, start=starts_daemon,
                unavailable=lambda why: print(f"{PROG}: daemon unavailable ({why}); searching in-process",
                                              file=sys.stderr),
            )
    except qc.DaemonError as exc:  # a request it refuses as asked (a bad --path pattern): a usage error
        return _fail(str(exc), 2 if (exc.status, exc.code) == (400, "bad_request") else 1)
    except qc.DaemonUnavailable as exc:
        return _fail(str(exc))
    if not args.collection:
        qc.record_freshness(root, stamp, refresh, signature, response)
    if os.environ.get("QMD_TIMING"):  # for bench/daemon.py: the daemon's side of this call
        keys = ("search_ms", "took_ms", "refreshed", "stale", "in_process", "watched")
        timing = {k: response.get(k) for k in keys}
        timing["sent_refresh"] = refresh
        print(json.dumps({"qmd_timing": timing}), file=sys.stderr)
    # an agent reads stderr too: what the results are made of, and whether they lag the edits
    for line in qc.answer_notices(response, root, patterns="--path"):
        print(f"{PROG}: {line}", file=sys.stderr)
    rows = shape(response, root)
    if not qc.prepare_stdout() or args.json:
        json.dump(rows, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    else:
        _table(rows)
    return 0


def run() -> None:
    try:
        code = main()
        sys.stdout.flush()
        sys.stderr.flush()
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    os._exit(code)  # output flushed, no threads or atexit work: skip interpreter teardown (a few ms a call)


if __name__ == "__main__":
    run()
