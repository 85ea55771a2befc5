"""What `ai-search` and `qmd-warm` share: find the daemon, talk HTTP to it, start it, fall back.

Standard library only, and only cheap modules at import time (no urllib, http.client, ssl,
pathlib): a client pays for its interpreter start on every call. Paths mirror
qmd_daemon/settings.py (QMD_DAEMON_HOME, XDG_STATE_HOME); keep the two in step.
"""

from __future__ import annotations

import _socket  # the C module: `socket` drags in selectors, enum and IDNA on connect
import json
import os
import sys
import time

if False:  # annotations only: importing typing costs ~5 ms on every call
    from collections.abc import Callable
    from typing import Any

STATE_FILE = "daemon.json"
LOCK_FILE = "daemon.lock"
SPAWN_MARKER = "spawn.marker"
KEPT_OLDER_FILE = "older-daemon.json"  # an older daemon this client cannot replace (_keep_older)
CRASH_FILE = "daemon-crash.json"  # daemons that died one after another, none answering between (note_crash)
# How long clients search in-process, starting no daemon, once daemons crashed twice in a row: on a
# CUDA build that killed every daemon at its first model load, each ai-search paid two starts, two
# model loads and two crashes before its in-process search, and daemon.log filled with dumps
CRASH_BACKOFF_S = 600.0
START_TIMEOUT_S = float(os.environ.get("QMD_START_TIMEOUT", "20"))
# connect + the daemon's proof: a loopback daemon answers in milliseconds, so anything slower is a
# stranger, a hung daemon or a busy one, and the user should not wait on it
HANDSHAKE_TIMEOUT_S = float(os.environ.get("QMD_HANDSHAKE_TIMEOUT", "3"))
LOG_MAX_BYTES = 5 * 1024 * 1024
# how long a daemon whose port failed may keep its lock before it counts as hung (ensure_daemon)
LOCK_LET_GO_S = 2.0
# The daemon's proof that it holds the token: HMAC-SHA256(token, PROOF_LABEL | port | nonce), made
# by qmd_daemon/daemon/state.py::daemon_proof, which imports these constants from here.
PROOF_LABEL = b"qmd-daemon proof v1: daemon to client"
MAX_HEADER_BYTES = 65536
MAX_CHALLENGE_BYTES = 4096  # the proof is ~100 bytes of JSON: a stranger's big body is refused
# The index schema this package's code maintains. Mirrors qmd_daemon/store/schema.py::SCHEMA_VERSION
# (a test keeps the two in step): a daemon whose state file names an older one (or none: code from
# before the daemon said) was started before a `pip install -U`, and is replaced (retire_older).
INDEX_SCHEMA = 10


class DaemonUnavailable(Exception):
    """The daemon is not running, did not start, or rejects our token: start one or fall back."""


class NotTheDaemon(DaemonUnavailable):
    """Whatever sits on the state file's port did not prove it holds the token (nothing there,
    a stranger, a silent or hung process): it got a nonce and nothing else."""


class DaemonDied(DaemonUnavailable):
    """The daemon died while answering (its lifetime lock is free): a crash, worth saying even
    when the daemon started in its place answers."""


class DaemonBackingOff(DaemonUnavailable):
    """Daemons crashed twice in a row a moment ago: none is started until CRASH_BACKOFF_S passed
    (backing_off); the message says when, why, and how to try one again now."""


class DaemonError(Exception):
    """The daemon answered with an error body (bad request, unknown collection ...)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


# -- output --------------------------------------------------------------------------------------


def prepare_stdout() -> bool:
    """Make stdout safe for any snippet; True when it is a terminal. A pipe (an agent reading the
    JSON) gets UTF-8 whatever the locale says: Windows gives pipes its ANSI code page, which has
    no box-drawing or CJK characters, and the first such snippet would end the process. A terminal
    keeps its own encoding and shows '?' for what it cannot."""
    stream = sys.stdout
    if not hasattr(stream, "reconfigure"):  # none (pythonw) or replaced by the caller: leave it
        return False
    tty = stream.isatty()
    if tty:
        stream.reconfigure(errors="replace")
    elif stream.encoding.lower().replace("-", "") != "utf8":
        stream.reconfigure(encoding="utf-8")
    return tty


# -- input ---------------------------------------------------------------------------------------

STDIN_QUERY = "-"  # the query argument that reads the query from stdin
MAX_STDIN_QUERY = 1_000_000  # characters: a long bug report is ~5,000
# What the daemon reads of a request body: a /search carrying the longest query `-` takes, every
# character JSON-escaped (an astral one as two `\\uXXXX`: 12 bytes), with room for the rest. It
# read 1 MiB, and an 840,000-character report answered "Request Entity Too Large".
MAX_REQUEST_BYTES = 12 * MAX_STDIN_QUERY + (1 << 20)
# The longest request fallback_search passes as an argument: Linux takes 128 KiB in one, Windows
# 32,767 characters in a whole command line; a longer one goes on the child's stdin.
MAX_REQUEST_ARG = 30_000


def query_from_stdin() -> str:
    """The query `-` stands for: stdin's text, as UTF-8. A bug report or a traceback holds quotes,
    backticks and `$`, which an agent must otherwise get through a shell's quoting intact; typed
    lines (`lex:`, `vec:`) are one per line. A terminal is refused rather than waited on (an agent
    in a pseudo-terminal would hang). ValueError: the one-line reason."""
    stream = sys.stdin
    if stream is None or stream.isatty():
        raise ValueError("`-` reads the query from stdin, which is a terminal here: pipe the text in "
                         "(ai-search - < report.txt)")
    raw = stream.buffer.read(4 * MAX_STDIN_QUERY + 4) if hasattr(stream, "buffer") else stream.read().encode()
    text = raw.decode("utf-8", errors="replace")
    if len(text) > MAX_STDIN_QUERY:
        raise ValueError(f"the query on stdin is over {MAX_STDIN_QUERY:,} characters")
    return text


# -- paths ---------------------------------------------------------------------------------------


def _env_path(name: str) -> str | None:
    value = os.environ.get(name)
    return os.path.expanduser(value) if value else None


def state_dir() -> str:
    home = _env_path("QMD_DAEMON_HOME")
    if home:
        return os.path.join(home, "state")
    base = _env_path("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "qmd-daemon")


def log_dir() -> str:
    return os.path.join(state_dir(), "logs")


def private_dir(path: str) -> str:
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def open_private_append(path: str) -> int:
    """A descriptor appending to `path`, owner-only (logs name the user's repositories and queries):
    one an earlier version left readable to all is made private too."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    if os.name == "posix":
        try:  # noqa: SIM105 - contextlib costs an import on every call
            os.fchmod(fd, 0o600)
        except OSError:
            pass  # not ours to change (another owner): the log is written all the same
    return fd


def log_file(name: str) -> Any:
    """Append handle on log_dir/name, rotated once past 5 MB; folder and file owner-only."""
    folder = private_dir(log_dir())
    path = os.path.join(folder, name)
    try:
        if os.path.getsize(path) > LOG_MAX_BYTES:
            os.replace(path, path + ".1")
    except OSError:
        pass
    if os.name == "posix":
        try:  # noqa: SIM105 - contextlib costs an import on every call
            os.chmod(folder, 0o700)  # one an earlier version made readable to all
        except OSError:
            pass
    return os.fdopen(open_private_append(path), "ab")


# -- repository ----------------------------------------------------------------------------------


FOLDER_GONE = (
    "the current folder no longer exists (moved or deleted?): "
    "cd into the repository again, or pass --repo DIR"
)


def start_folder(repo: str | None) -> str | None:
    """`repo`, else the current folder, made absolute; None when the shell's folder was deleted
    or moved away beneath it (getcwd fails then, and so does a relative `repo`)."""
    try:
        return os.path.abspath(repo or os.getcwd())
    except FileNotFoundError:
        return None


def repo_root(start: str) -> tuple[str, bool]:
    """The git top level above `start` (a `.git` folder or file), else `start`; and whether git."""
    path = os.path.realpath(start)
    candidate = path
    while True:
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate, True
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return path, False
        candidate = parent


def git_executable() -> str | None:
    """git's absolute path from PATH's absolute folders only: a relative entry ('.', '') or
    Windows' implicit current folder would run a `git` the repository itself ships. The engine's
    scanner and the setup use it too (stdlib only, so it lives on this side)."""
    names = ("git.exe", "git") if os.name == "nt" else ("git",)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if os.path.isabs(folder):
            for name in names:
                candidate = os.path.join(folder, name)
                if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                    return candidate
    return None


def git_argv(git: str, root: str, *args: str) -> list[str]:
    """Every git call of the clients: none may run a program the repository configures. Hooks and
    core.fsmonitor are switched off here; clean/smudge filters, textconv and external diff cannot
    be switched off by name (any driver name works), so the clients only run commands that never
    read file contents through them (`ls-files`); so does the engine's scanner (ingest/scan.py)."""
    return [
        git, "--no-pager", "-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}",
        "-C", root, *args,
    ]  # fmt: skip


def run_git(root: str, *args: str) -> bytes | None:
    """`git -C root args...` stdout, or None when git fails. posix_spawn where there is one:
    importing subprocess costs more than the git call itself."""
    git = git_executable()
    if git is None:
        return None
    argv = git_argv(git, root, *args)
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")  # never take index.lock from the user's git
    if hasattr(os, "posix_spawn"):
        read_fd, write_fd = os.pipe()
        null = os.open(os.devnull, os.O_RDWR)
        try:
            actions = [
                (os.POSIX_SPAWN_DUP2, null, 0),
                (os.POSIX_SPAWN_DUP2, write_fd, 1),
                (os.POSIX_SPAWN_DUP2, null, 2),
            ]
            pid = os.posix_spawn(git, argv, env, file_actions=actions)
        except OSError:
            os.close(read_fd)
            return None
        finally:
            os.close(write_fd)
            os.close(null)
        chunks = []
        with os.fdopen(read_fd, "rb") as out:
            while chunk := out.read(1 << 16):
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
        return b"".join(chunks) if os.waitstatus_to_exitcode(status) == 0 else None
    import subprocess

    try:
        proc = subprocess.run(argv, capture_output=True, env=env, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def repo_signature(root: str) -> str | None:
    """The files the index takes from `root`'s repository (the outer one for a submodule) as git
    lists them (tracked, and untracked but not ignored: what scan.py indexes) with the size and
    mtime of each: equal signatures mean nothing the index sees has changed. Not `git status`:
    for a file whose mtime moved but whose size did not, status reads it through the repository's
    clean filter, a program .git/config names. None when git cannot tell (the caller then
    refreshes). A checksum, not a cryptographic hash: a miss costs one refresh the watcher would
    do anyway."""
    import zlib

    parts = _listing_stats(os.fsencode(_listing_root(root)))
    if parts is None:
        return None
    blob = b"".join(parts)
    return f"{len(blob)}-{zlib.crc32(blob):08x}-{zlib.adler32(blob):08x}"


def _listing_root(root: str) -> str:
    """The repository whose listing holds `root`: `root`, or the one above when `root` is a
    submodule its .gitmodules declares (scan.py lists a submodule with the outer repository, whose
    collection then answers a search made inside it: an edit outside the submodule is the
    collection's change too). A superset never misses a change; it may cost a refresh."""
    while True:
        parent = os.path.dirname(root)
        if parent == root:
            return root
        above, is_git = repo_root(parent)
        if not is_git or os.path.relpath(root, above).replace(os.sep, "/") not in _declared_submodules(above):
            return root
        root = above


def _declared_submodules(top: str) -> set[str]:
    """The `path = ...` entries of `top`/.gitmodules (read, not asked of git: a call costs more)."""
    try:
        with open(os.path.join(top, ".gitmodules"), encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return set()
    pairs = (line.strip().partition("=") for line in lines)
    return {value.strip().strip('"') for key, _, value in pairs if key.strip() == "path"}


def _listing_stats(root: bytes) -> list[bytes] | None:
    """git's listing of `root` and the size and mtime of each name, then the same of each
    checked-out submodule in it (a tracked folder holding a .git: scan.py indexes its files too)."""
    import stat

    out = run_git(os.fsdecode(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if out is None:
        return None
    parts = [out]
    for rel in out.split(b"\0"):
        if not rel:
            continue
        path = os.path.join(root, rel)
        try:
            st = os.stat(path)
            parts.append(b"%d %d\0" % (st.st_size, st.st_mtime_ns))
        except OSError:
            parts.append(b"gone\0")
            continue
        # a folder first: asking every listed file for a .git would double this walk's syscalls
        if stat.S_ISDIR(st.st_mode) and os.path.lexists(os.path.join(path, b".git")):
            parts.extend(_listing_stats(path) or [b"unlisted\0"])
    return parts


def _stamp_path(root: str) -> str:
    import zlib  # ~0.7 ms to import; hashlib (which loads OpenSSL) ~5 ms

    name = "".join(c if c.isalnum() else "_" for c in os.path.basename(root))[:40]
    return os.path.join(state_dir(), "repos", f"{name}-{zlib.crc32(os.fsencode(root)):08x}.json")


def read_stamp(root: str) -> dict[str, Any]:
    """What the last call recorded for `root`: `signature` (repo_signature when the daemon last
    refreshed it) and `watched` (the daemon said it watches the root and keeps it fresh)."""
    try:
        with open(_stamp_path(root), encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) and data.get("root") == root else {}
    except (OSError, ValueError):
        return {}


def write_stamp(root: str, signature: str | None, watched: bool = False) -> None:
    if signature is None and not watched:
        # nothing to remember; only forget a `watched` mark so the next call checks with git
        try:  # noqa: SIM105 - contextlib costs an import on every call
            os.unlink(_stamp_path(root))
        except OSError:
            pass
        return
    path = _stamp_path(root)
    try:
        private_dir(os.path.dirname(path))
        stamp = {"root": root, "signature": signature, "watched": watched, "at": time.time()}
        _write_private_json(path, stamp)
    except OSError:
        pass


def search_body(
    query: str, limit: int, refresh: bool | str, wait: float, root: str | None,
    collections: list[str] | None = None, paths: list[str] | None = None, **options: Any,
) -> dict[str, Any]:
    """A POST /search body as every client sends it: the named `collections`, else the folder
    `root` (its collection, registered on first use when it is a git top level), else neither
    (the daemon's default scope); `options` (min_score, max_tokens, rerank) only when set."""
    body: dict[str, Any] = {"query": query, "limit": limit, "refresh": refresh, "wait": wait}
    if collections:
        body["collections"] = collections
    elif root is not None:
        body["path"] = root
    if paths:
        body["paths"] = paths
    body.update((key, value) for key, value in options.items() if value is not None)
    return body


def freshness(root: str, is_git: bool, named: bool) -> tuple[bool | str, str | None, dict[str, Any]]:
    """What a search from `root` asks of the daemon before it answers: `"auto"` when the daemon
    said last time that it watches the root (it takes in every change itself, no git call here),
    else a refresh when git's listing, sizes and mtimes changed since the last refresh (always
    outside git: nothing to compare). Returns (refresh, signature, stamp) for record_freshness.
    `named`: collections named instead of the root's: the stamp's watch says nothing of them."""
    stamp = read_stamp(root)
    if stamp.get("watched") and not named:
        return "auto", None, stamp
    signature = repo_signature(root) if is_git else None
    return signature is None or signature != stamp.get("signature"), signature, stamp


def record_freshness(
    root: str, stamp: dict[str, Any], refresh: bool | str, signature: str | None, response: dict[str, Any]
) -> None:
    """Keep the root's stamp in step with the daemon's answer: watched now (auto from the next
    call), refreshed at `signature`, or no longer watched (back to the git check)."""
    watched = bool(response.get("watched"))
    if watched and not stamp.get("watched"):
        write_stamp(root, None, watched=True)
    elif not watched and refresh is True and response.get("refreshed"):
        write_stamp(root, signature)
    elif not watched and stamp.get("watched"):
        write_stamp(root, None)


def results_made_of(pending: int, deep: bool, static: bool) -> str:
    """What a search's results are made of while `pending` chunks of its scope wait for deep
    vectors (`deep`: the deep vector list found chunks; `static`: the static tier re-ranked keyword
    hits; the answer's `mode` says hybrid for either): one wording for ai-search and
    `qmd-daemon search`."""
    chunks = f"{pending:,} chunk{'' if pending == 1 else 's'}"
    if not deep:
        made = "keywords re-ranked by static vectors" if static else "keywords only"
        waits = "waits" if pending == 1 else "wait"
        return f"results from {made} (no deep vectors yet: {chunks} {waits} for them)"
    ranked = "ranked by keywords and static vectors" if static else "found by keywords only"
    return (f"hybrid results (keywords + deep vectors); the {chunks} without deep vectors yet"
            f" {'is' if pending == 1 else 'are'} {ranked}")


def notice_due(root: str, kind: str, every_s: float) -> bool:
    """True when a line of `kind` was not printed for `root` in the last `every_s` seconds, and
    then records it as printed now (beside the root's stamp): a line repeated on every call is
    noise to an agent that reads stderr. Unrecordable (a read-only state folder): always due."""
    path = _stamp_path(root)[: -len(".json")] + ".notice.json"
    now = time.time()
    try:
        with open(path, encoding="utf-8") as handle:
            last = json.load(handle)
    except (OSError, ValueError):
        last = None
    if isinstance(last, dict) and last.get("root") == root and last.get("kind") == kind:
        at = last.get("at")
        if isinstance(at, (int, float)) and 0 <= now - at < every_s:
            return False
    try:
        private_dir(os.path.dirname(path))
        _write_private_json(path, {"root": root, "kind": kind, "at": now})
    except OSError:
        pass
    return True


# the line about chunks still without deep vectors: said again after this long (or when it says
# something else), not on every call: an agent reads it, and a repeated line is noise to it
VECTORS_NOTICE_EVERY_S = 600.0


def unfinished_refresh(reason: Any, root: str) -> str:
    """What an answer given before the daemon's refresh finished lacks, by why the refresh runs:
    a first index commits when it is done, so none of the repository is in it yet (it said "the
    latest edits may be missing" on a repository nobody had edited); an upgrade's re-read leaves
    the older chunks searchable."""
    if reason == "new":
        return (f"the first index of {root} is not finished yet: these results hold none of its files; "
                "the daemon goes on indexing it, ask again in a moment")
    if reason == "upgrade":
        return (f"the index of {root} is still being re-read after an upgrade: results come from the "
                "chunks an older version made")
    return "the index is still catching up with recent changes: the latest edits may be missing"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return "under a minute"
    return f"about {round(seconds / 60)} min" if seconds < 5400 else f"about {seconds / 3600:.1f} h"


def vectors_line(response: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, line) while chunks in the search's scope wait for deep vectors: what the results are
    made of (the static tier re-ranks keyword hits where deep vectors are missing, so the search
    is hybrid already) and when the deep vectors come (the daemon's `embedding` and
    `vectors_eta_s`; a one-off process says who embeds them). `kind` changes with what the line
    says, not with the counts: a new kind is printed at once, the same one once in a while.
    It said `1 chunks still wait for vectors: those found by keywords only for now` on every call."""
    pending = response.get("pending_vectors")
    if not isinstance(pending, int) or pending <= 0:
        return None
    static = bool(response.get("static_rescored"))
    # a daemon before `deep_vectors`: its hybrid mode without static vectors was the deep list
    deep = bool(response.get("deep_vectors", response.get("mode") == "hybrid" and not static))
    what = results_made_of(pending, deep, static)
    embedding, eta = response.get("embedding"), response.get("vectors_eta_s")
    if embedding is None:  # a one-off process answered: no daemon job was asked
        state = "in-process"
        when = "this search ran without the daemon: `qmd-daemon embed` gives them deep vectors"
    elif embedding:
        state = "embedding"
        left = f"{_duration(eta)} left" if isinstance(eta, (int, float)) else "no estimate yet"
        when = f"the daemon is embedding them in the background ({left})"
    else:
        state, when = "idle", "no embedding runs for them: `qmd-daemon embed` gives them deep vectors"
    kind = f"{'deep' if deep else 'no-deep'}/{'static' if static else 'keywords'}/{state}"
    return kind, f"{what}; {when}"


def answer_notices(response: dict[str, Any], root: str | None, patterns: str) -> list[str]:
    """What an agent must know beside a search's hits, one line each: what the results are made of
    while deep vectors are pending (once per root and kind of line in VECTORS_NOTICE_EVERY_S),
    path patterns (`patterns`: how the caller names them) that matched no file, deep vectors
    switched off, and a refresh that failed or did not finish (an answer that lags the edits must
    not pass for current). ai-search prints them on stderr, the MCP search tool returns them with
    its hits: an MCP client's model never sees the server's stderr."""
    lines = []
    vectors = vectors_line(response)
    if vectors is not None and notice_due(root or "", vectors[0], VECTORS_NOTICE_EVERY_S):
        lines.append(vectors[1])
    if response.get("path_files") == 0:  # an empty answer is the patterns', not the question's
        # "e.g.": the examples, which read as the patterns given (`--path scr/` said `'src/', ...`)
        lines.append(f"no indexed file matches the {patterns} patterns (they are matched against paths "
                     "relative to the repository root, e.g. 'src/', '*.py', '!tests/')")
    deep_off = response.get("deep_off")
    if deep_off:  # no pass will ever bring deep vectors: say what the search used instead
        static = response.get("static_rescored")
        how = "keyword hits re-ranked by static vectors" if static else "keyword-only results"
        lines.append(f"deep vectors are {deep_off}: {how}")
    # not `stale`: that is also true while vectors are pending, which the first line says already
    error = response.get("refresh_error")
    if error:
        why = error.get("message") if isinstance(error, dict) else error
        lines.append(f"the refresh failed ({why}): results come from the index as it was")
    elif response.get("refreshed") is False:  # the refresh waited for did not finish within the wait
        lines.append(unfinished_refresh(response.get("refresh_reason"), root or "the repository"))
    return lines


def _write_private_json(path: str, data: Any) -> None:
    """Owner-only like every state file (they name the user's repositories), replaced whole:
    a reader sees the old file or the new one. O_TRUNC: a leftover tmp of a killed writer.
    The package's rule is qmd_daemon/atomic_files.replace_file; a client cannot import it."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


# -- HTTP ----------------------------------------------------------------------------------------


def read_state() -> dict[str, Any] | None:
    """The daemon's state file, or None when there is none or no daemon could have written it: a
    port past 65535 (a hand edit, a bad restore) raised OverflowError out of ai-search."""
    try:
        with open(os.path.join(state_dir(), STATE_FILE), encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    port, pid = state.get("port"), state.get("pid", 0)
    if type(port) is not int or not 0 < port < 65536 or type(pid) is not int:
        return None
    return state if isinstance(state.get("token"), str) else None


def _dechunk(data: bytes) -> bytes:
    out: list[bytes] = []
    pos = 0
    while True:
        end = data.index(b"\r\n", pos)
        size = int(data[pos:end].split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        out.append(data[end + 2 : end + 2 + size])
        pos = end + 2 + size + 2


def _recv(sock: Any, size: int, deadline: float | None) -> bytes:
    """One recv; with a `deadline` (time.monotonic()) the wait is what is left of it, so a peer
    that drips a byte at a time cannot stretch a per-recv timeout into minutes."""
    if deadline is not None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        sock.settimeout(left)
    return sock.recv(size)


def _read_reply(
    sock: Any, port: int, to_eof: bool, deadline: float | None = None, max_body: int | None = None
) -> tuple[int, bytes]:
    """(status, body) of one HTTP reply; `to_eof`: the peer closes after it (Connection: close),
    else its Content-Length says where it ends (the connection stays open for the next request).
    `deadline`: the whole reply by then; `max_body`: a longer Content-Length is refused unread."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        data = _recv(sock, 65536, deadline)
        if not data or len(raw) > MAX_HEADER_BYTES:
            raise DaemonUnavailable(f"truncated reply from port {port}")
        raw += data
    header, _, rest = raw.partition(b"\r\n\r\n")
    try:
        lines = header.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers["content-length"]) if "content-length" in headers else None
    except (IndexError, ValueError) as exc:
        raise DaemonUnavailable(f"unreadable reply from port {port}: {exc}") from None
    if max_body is not None and (length is None or length > max_body):
        raise DaemonUnavailable(f"a reply of {length} bytes from port {port} (at most {max_body} expected)")
    if to_eof:
        parts = [rest]
        while data := _recv(sock, 262144, deadline):
            parts.append(data)
        rest = b"".join(parts)
        if headers.get("transfer-encoding", "").lower() == "chunked":
            try:
                rest = _dechunk(rest)
            except ValueError as exc:
                raise DaemonUnavailable(f"unreadable reply from port {port}: {exc}") from None
    elif length is None:
        raise DaemonUnavailable(f"reply without a length from port {port}")
    while length is not None and len(rest) < length:
        data = _recv(sock, min(262144, length - len(rest)), deadline)
        if not data:
            raise DaemonUnavailable(f"truncated reply from port {port}")
        rest += data
    return status, rest[:length] if length is not None else rest


def _proof_ok(token: str, port: int, nonce: str, given: Any) -> bool:
    """The daemon's answer to our nonce, checked in constant time. `_hashlib` is the OpenSSL core
    that `hmac.digest` and `hmac.compare_digest` call: importing `hmac` itself pulls in all of
    hashlib (~10 ms a call), `_hashlib` ~2 ms."""
    hmac_digest: Callable[[bytes, bytes, str], bytes]
    try:
        from _hashlib import compare_digest, hmac_digest
    except ImportError:  # a Python built without OpenSSL
        from hmac import compare_digest
        from hmac import digest as hmac_digest
    if not isinstance(given, str):
        return False
    message = b"%s|%d|%s" % (PROOF_LABEL, port, nonce.encode("ascii"))
    wanted = hmac_digest(token.encode("utf-8"), message, "sha256").hex()
    return compare_digest(wanted.encode("ascii"), given.encode("utf-8", "replace"))


def _verified_socket(state: dict[str, Any], port: int) -> Any:
    """A connection to `port` whose peer proved it holds the state file's token, before the token,
    a query or a path is sent: the peer gets a random nonce and must answer with its HMAC. A
    process that took over a dead daemon's port learns nothing; the same connection then carries
    the real request, so the proof covers the peer that gets it. Connect and proof share one
    deadline of HANDSHAKE_TIMEOUT_S, however slowly the peer answers."""
    nonce = os.urandom(16).hex()
    deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.settimeout(HANDSHAKE_TIMEOUT_S)
        sock.connect(("127.0.0.1", port))
        sock.sendall(
            f"GET /challenge?nonce={nonce} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Length: 0\r\n\r\n".encode("latin-1")
        )
        status, body = _read_reply(sock, port, to_eof=False, deadline=deadline, max_body=MAX_CHALLENGE_BYTES)
        proof = json.loads(body).get("proof") if status == 200 else None
    except (OSError, ValueError, AttributeError, DaemonUnavailable) as exc:
        sock.close()
        raise NotTheDaemon(f"no daemon answers on port {port} ({exc})") from None
    if not _proof_ok(str(state["token"]), port, nonce, proof):
        sock.close()
        raise NotTheDaemon(f"the process on port {port} is not the daemon (it could not prove the token)")
    return sock


def _died(settle_s: float = 0.5) -> bool:
    """Whether the daemon that broke off a reply is gone: its lifetime lock is free (a crash: on a
    CUDA build of llama.cpp every daemon once died with SIGSEGV at its first model load, and the
    user saw only "connection reset"). The kernel may close the reply's socket before the lock's
    file as the process exits: asks again for up to `settle_s`."""
    deadline = time.monotonic() + settle_s
    while daemon_lock_held():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def http(state: dict[str, Any], method: str, path: str, body: Any = None, timeout: float = 30.0) -> Any:
    """One request to the daemon (a plain socket: http.client would cost an ssl import), sent only
    once the peer proved it is the daemon; `timeout` applies from then on. Connection trouble, a
    peer that is not the daemon or a rejected token -> DaemonUnavailable; an error body ->
    DaemonError."""
    port = int(state["port"])
    sock = _verified_socket(state, port)
    payload = b"" if body is None else json.dumps(body).encode("utf-8")
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {state['token']}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    try:
        sock.settimeout(timeout)
        sock.sendall(head.encode("latin-1") + payload)
        status, rest = _read_reply(sock, port, to_eof=True)
    except (OSError, DaemonUnavailable) as exc:
        if _died():
            said = last_log_line("daemon.log")
            note_crash(state.get("pid"), said)
            raise DaemonDied(
                f"the daemon (pid {state.get('pid')}) died while answering"
                f"{f' ({said})' if said.startswith('Fatal Python error:') else ''}: "
                f"{os.path.join(log_dir(), 'daemon.log')} ends with what it said last"
            ) from None
        if isinstance(exc, DaemonUnavailable):
            raise
        raise DaemonUnavailable(f"cannot reach the daemon on port {port}: {exc}") from None
    finally:
        sock.close()
    try:
        data = json.loads(rest) if rest.strip() else {}
    except ValueError as exc:
        raise DaemonUnavailable(f"unreadable reply from port {port}: {exc}") from None
    if status == 401:
        raise DaemonUnavailable("the daemon rejected the token (stale state file)")
    if status >= 400:
        err = data.get("error", {}) if isinstance(data, dict) else {}
        raise DaemonError(
            status, str(err.get("code", "http_error")), str(err.get("message", f"HTTP {status}"))
        )
    return data


# -- starting the daemon ---------------------------------------------------------------------------


def _shebang_python(script: str) -> str | None:
    try:
        with open(script, "rb") as handle:
            first = handle.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].strip().split()
    if not words:
        return None
    exe = os.fsdecode(words[0])
    if os.path.basename(exe) == "env" and len(words) > 1:
        import shutil

        return shutil.which(os.fsdecode(words[1]))
    return exe if os.path.exists(exe) else None


def daemon_python() -> list[str]:
    """How to run `python -m qmd_daemon.daemon`: $QMD_DAEMON_PYTHON, else this interpreter when it
    has qmd_daemon, else the interpreter of the `qmd-daemon` console script."""
    configured = os.environ.get("QMD_DAEMON_PYTHON")
    if configured:
        return [configured, "-m", "qmd_daemon.daemon"]
    import importlib.util

    if importlib.util.find_spec("qmd_daemon") is not None:
        return [sys.executable, "-m", "qmd_daemon.daemon"]
    import shutil

    for script in (
        os.path.join(os.path.dirname(sys.executable), "qmd-daemon"),
        os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "qmd-daemon"),
        shutil.which("qmd-daemon"),
    ):
        if script and os.path.exists(script):
            python = _shebang_python(script)
            if python:
                return [python, "-m", "qmd_daemon.daemon"]
    raise DaemonUnavailable("qmd_daemon is not installed for this Python (set QMD_DAEMON_PYTHON)")


def spawn_detached(argv: list[str], log_name: str) -> Any:
    """Start `argv` in a session of its own, its output appended to log_name; its Popen."""
    import subprocess

    log = log_file(log_name)
    kwargs: dict[str, Any] = dict(
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, close_fds=True
    )
    if sys.platform == "win32":  # pragma: no cover (sys.platform, not os.name: mypy narrows on it)
        kwargs["creationflags"] = (
            subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_NO_WINDOW
        )
    else:
        kwargs["start_new_session"] = True
    try:
        return subprocess.Popen(argv, cwd=private_dir(state_dir()), **kwargs)
    finally:
        log.close()


def last_log_line(name: str) -> str:
    """The last line of log_dir/name (what a daemon that failed to start said last), or ''; for
    a daemon killed by a fatal signal, the dump's `Fatal Python error: ...` line (the dump itself
    ends with its list of extension modules: no reason)."""
    try:
        with open(os.path.join(log_dir(), name), "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 32768))  # a dump of every thread: a few kB
            lines = log.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    if lines and lines[-1].startswith("Extension modules:"):
        fatal = [line for line in lines if line.startswith("Fatal Python error:")]
        if fatal:
            return fatal[-1].strip()
    return lines[-1].strip() if lines else ""


def _claim_spawn() -> bool:
    """Only one of many clients starting at once spawns the daemon (the daemon's own lock would
    sort out the rest, but each spawn costs a full interpreter start)."""
    marker = os.path.join(private_dir(state_dir()), SPAWN_MARKER)
    for _ in range(2):
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            return True
        except FileExistsError:
            try:
                if time.time() - os.path.getmtime(marker) < START_TIMEOUT_S + 5:
                    return False
                os.unlink(marker)  # left by a client that died while starting one
            except OSError:
                pass
        except OSError:
            return True
    return False


def start_in_background() -> None:
    """Start a daemon for the next call without waiting for it; its spawn marker, left in place,
    tells a client starting one meanwhile that it is on its way (it ages out as a dead one's)."""
    if backing_off() is None and _claim_spawn():
        spawn_detached([*daemon_python(), "serve"], "daemon.log")


def _release_spawn() -> None:
    try:  # noqa: SIM105 - contextlib costs an import on every call
        os.unlink(os.path.join(state_dir(), SPAWN_MARKER))
    except OSError:
        pass


def healthy(state: dict[str, Any] | None, timeout: float = 2.0) -> bool:
    if state is None:
        return False
    try:
        return bool(http(state, "GET", "/health", timeout=timeout).get("ok"))
    except (DaemonUnavailable, DaemonError):
        return False


def daemon_lock_held() -> bool:
    """Whether a live daemon holds state/daemon.lock (the kernel drops it when the daemon dies,
    kill -9 included). Held while its state file's port does not answer: that daemon is hung,
    and another one could not start beside it. Tested with a shared lock, dropped at once: the
    daemon retries its own exclusive one for a moment (state.py), so this never keeps one out."""
    try:
        fd = os.open(os.path.join(state_dir(), LOCK_FILE), os.O_RDWR)
    except OSError:
        return False
    try:
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
            import msvcrt

            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError:
                return True
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
            return False
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _hung(state: dict[str, Any]) -> bool:
    """The daemon of `state`, whose port just failed, still holds its lock after LOCK_LET_GO_S.
    A killed one lets go as the kernel frees its memory (a second with the models loaded), and
    one stopping at the end of its close; a lock held by another pid than the state file names is
    a daemon starting after a kill (kill -9 leaves the file), which another client started; a state
    file that changed meanwhile is the daemon's own, written again over a damaged one."""
    deadline = time.monotonic() + LOCK_LET_GO_S
    while daemon_lock_held() and _lock_pid() in (None, state.get("pid")) and read_state() == state:
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.05)
    return False


def daemon_lock_holder() -> int | None:
    """The pid of the live daemon holding state/daemon.lock (as it wrote it), else None: the
    setup signals only that process (a state file's pid may be another program's by now)."""
    return _lock_pid() if daemon_lock_held() else None


def _lock_pid() -> int | None:
    """The pid the lock's holder wrote in it (qmd_daemon/locks.py::file_lock), None if unknown."""
    try:
        with open(os.path.join(state_dir(), LOCK_FILE), encoding="ascii") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def ensure_daemon(timeout: float = START_TIMEOUT_S, failed: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state of a healthy daemon, starting one (detached) when there is none or it is older
    than this client (retire_older). `failed`: a state that just failed its handshake (not asked
    again: a silent port costs HANDSHAKE_TIMEOUT_S).
    A daemon that holds its lock but does not answer is not replaced (it cannot be): the caller
    falls back at once instead of waiting for a start that cannot happen."""
    state = read_state()
    if state is not None and _outdated(state):
        older = _older_than_client(state)
        if older and _cannot_replace(state) and healthy(state):
            _say_kept(state)
            return state
        daemon = f"the daemon (pid {state.get('pid')})"
        why = "it runs older code than this client" if older else (
            "its code was replaced on disk since it started (an upgrade)")
        print(f"qmd-daemon: restarting {daemon}: {why}", file=sys.stderr)
        try:  # noqa: SIM105 - contextlib costs an import on every call
            retire_older(state)
        except (DaemonUnavailable, DaemonError):
            pass  # not the daemon, or already gone: one is started below all the same
        state = read_state()
    elif state is not None and state != failed and healthy(state):
        return state
    if state is not None and _hung(state):
        raise DaemonUnavailable(f"the daemon (pid {state.get('pid')}) is running but does not answer")
    fresh = read_state()
    if fresh is not None and fresh != state and healthy(fresh):  # its file written again meanwhile
        return fresh
    _raise_if_backing_off()
    spawned = _claim_spawn()
    try:
        child = spawn_detached([*daemon_python(), "serve"], "daemon.log") if spawned else None
        deadline = time.monotonic() + timeout
        delay = 0.02
        while time.monotonic() < deadline:
            time.sleep(delay)
            delay = min(delay * 1.5, 0.2)
            fresh = read_state()
            if fresh is not None and fresh != state and healthy(fresh):
                if _older_than_client(fresh):
                    _keep_older(fresh)
                return fresh
            code = None if child is None else child.poll()
            if code is not None and code < 0 and child is not None:  # killed by a signal: a crash
                note_crash(child.pid, last_log_line("daemon.log"))
                _raise_if_backing_off()
            if code not in (None, 0):
                # it said why in its log and will not answer: no waiting out the timeout (a
                # damaged index or a bad index.yml cost every ai-search 20 s)
                raise DaemonUnavailable(f"the daemon exited at start: {last_log_line('daemon.log')}")
            if code == 0:
                # a serve that found another daemon healthy, or one that stopped before this
                # client got to it (an idle exit, a shutdown): the timeout would be waited out
                # for nothing. The healthy one is taken on the next pass, even when it is the
                # one whose handshake failed before
                if not healthy(read_state()):
                    raise DaemonUnavailable(f"the daemon stopped at start: {last_log_line('daemon.log')}")
                state = child = None
    finally:
        if spawned:
            _release_spawn()
    raise DaemonUnavailable(f"the daemon did not answer within {timeout:g}s (see {log_dir()}/daemon.log)")


def _older_than_client(state: dict[str, Any]) -> bool:
    """Code older than this client's: an older index schema, or a daemon that names no package
    file (code from before `code_replaced` could tell, left running across a pip install -U)."""
    schema = state.get("schema")
    return not isinstance(schema, int) or schema < INDEX_SCHEMA or not isinstance(state.get("code"), dict)


def code_replaced(state: dict[str, Any]) -> bool:
    """The package file the daemon's code was loaded from is no longer the one on disk: a `pip
    install -U` (or install.sh's) since it started, which needs no new schema, so the daemon kept
    serving the old code (fixes and all) until it idled out. One stat. A file that is gone (an
    install in progress, a removed environment) is not taken for a change: restarting then could
    start nothing."""
    code = state.get("code")
    if not isinstance(code, dict):
        return False
    try:
        found = os.stat(code["file"])
    except (OSError, KeyError, TypeError, ValueError):
        return False
    return (found.st_mtime_ns, found.st_size) != (code.get("mtime_ns"), code.get("size"))


def _outdated(state: dict[str, Any]) -> bool:
    """A daemon to replace before asking it anything (retire_older)."""
    return _older_than_client(state) or code_replaced(state)


def _kept_path() -> str:
    return os.path.join(state_dir(), KEPT_OLDER_FILE)


def _keep_older(state: dict[str, Any]) -> None:
    """The daemon this client just started runs older code (QMD_DAEMON_PYTHON, or the
    `qmd-daemon` script found, belongs to an older install): starting it again would start the
    same code, so it is recorded as kept, and used, until another Python would start it."""
    try:  # noqa: SIM105 - contextlib costs an import on every call
        _write_private_json(_kept_path(), {"pid": state.get("pid"), "python": daemon_python()[0]})
    except OSError:
        pass
    _say_kept(state)


def _cannot_replace(state: dict[str, Any]) -> bool:
    """This older daemon was started by the Python this client would start again (_keep_older)."""
    try:
        with open(_kept_path(), encoding="utf-8") as handle:
            kept = json.load(handle)
        return kept == {"pid": state.get("pid"), "python": daemon_python()[0]}
    except (OSError, ValueError, DaemonUnavailable):
        return False


def _say_kept(state: dict[str, Any]) -> None:
    python = daemon_python()[0]
    setting = "QMD_DAEMON_PYTHON" if os.environ.get("QMD_DAEMON_PYTHON") else "the qmd-daemon script's Python"
    print(
        f"qmd-daemon: using the daemon (pid {state.get('pid')}) as it is: {python} ({setting}) runs "
        f"older qmd-daemon code (index schema {state.get('schema', 'unknown')}, this client "
        f"{INDEX_SCHEMA}{'' if isinstance(state.get('code'), dict) else '; a version before this one'}), "
        "so restarting it would start the same code; upgrade qmd-daemon there, or "
        "point QMD_DAEMON_PYTHON at this client's Python",
        file=sys.stderr,
    )


def retire_older(state: dict[str, Any]) -> None:
    """Stop a daemon whose code is older than this client's (still running across an upgrade: its
    writes to the upgraded index are refused, so it would answer from an index it cannot refresh)
    and wait for it to let go of its lock, so the new daemon can start. A peer that does not prove
    it is the daemon is left alone (DaemonUnavailable, as for any request)."""
    http(state, "POST", "/shutdown", timeout=5.0)
    deadline = time.monotonic() + START_TIMEOUT_S
    while daemon_lock_held() and time.monotonic() < deadline:
        time.sleep(0.05)


def call(method: str, path: str, body: Any = None, timeout: float = 30.0, start: bool = True) -> Any:
    """A request to the running daemon; when it is absent, stale or older than this client, start
    one and retry once (none while backing_off: DaemonBackingOff)."""
    state = read_state()
    if state is not None and not (start and _outdated(state)):
        try:
            return _answered(state, method, path, body, timeout)
        except DaemonUnavailable as exc:
            if not start:
                raise
            if isinstance(exc, DaemonDied):
                print(f"qmd-daemon: {exc}; starting another", file=sys.stderr)
    elif not start:
        raise DaemonUnavailable("no daemon is running")
    return _answered(ensure_daemon(failed=state), method, path, body, timeout)


def _answered(state: dict[str, Any], method: str, path: str, body: Any, timeout: float) -> Any:
    """http's reply; an answer (an error body too) ends the crash record, and a death that makes
    crashes in a row raises DaemonBackingOff instead of DaemonDied. Not in http itself: a daemon
    that answers /health and dies at its first search must not clear it on each start."""
    try:
        reply = http(state, method, path, body, timeout)
    except DaemonDied:
        _raise_if_backing_off()
        raise
    except DaemonError:
        forget_crashes()
        raise
    forget_crashes()
    return reply


# -- crashes in a row ----------------------------------------------------------------------------


def _crash_path() -> str:
    return os.path.join(state_dir(), CRASH_FILE)


def crash_record() -> dict[str, Any] | None:
    """The record of daemons that died in a row (note_crash): `crashes`, `at` (the last one, epoch
    seconds), its `pid` and `reason`; None when there is none, or it is damaged (never a
    traceback: a record nobody can read is no back-off)."""
    try:
        with open(_crash_path(), encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    crashes, at = record.get("crashes"), record.get("at")
    if type(crashes) is not int or crashes < 1 or type(at) not in (int, float):
        return None
    return record


def note_crash(pid: Any, reason: str) -> None:
    """Record that the daemon `pid` crashed (died while answering, or killed by a signal as it
    started). It counts as one more in a row after a crash within CRASH_BACKOFF_S, or after a
    back-off whose window passed (the retry it let through crashed too); the same pid seen again
    (a second request that saw it die) is not counted twice. Owner-only and replaced whole, like
    every state file."""
    old = crash_record()
    if old is not None and old.get("pid") == pid:
        return
    now = time.time()
    again = old is not None and (old["crashes"] >= 2 or 0 <= now - old["at"] < CRASH_BACKOFF_S)
    crashes = old["crashes"] + 1 if old is not None and again else 1
    record = {"at": now, "pid": pid, "reason": reason[:300], "crashes": crashes}
    try:  # noqa: SIM105 - contextlib costs an import on every call
        _write_private_json(os.path.join(private_dir(state_dir()), CRASH_FILE), record)
    except OSError:
        pass  # an unwritable state folder: every search starts a daemon, as before


def forget_crashes() -> None:
    """A daemon answered: crashes before it are no longer in a row (one syscall on every call)."""
    try:  # noqa: SIM105 - contextlib costs an import on every call
        os.unlink(_crash_path())
    except OSError:
        pass


def backing_off() -> dict[str, Any] | None:
    """The crash record while it holds daemon starts back: two crashes or more in a row, the last
    under CRASH_BACKOFF_S ago (a clock set back past it does not stretch the wait)."""
    record = crash_record()
    if record is None or record["crashes"] < 2 or not 0 <= time.time() - record["at"] < CRASH_BACKOFF_S:
        return None
    return record


def backoff_line(record: dict[str, Any]) -> str:
    """The one line a client and `qmd-daemon status` say while backing_off: when, why, until when,
    where the log is and how to try a daemon again at once."""
    crashes = record["crashes"]
    times = "twice" if crashes == 2 else f"{crashes} times"
    last = record["at"]
    at, until = (time.strftime("%H:%M:%S", time.localtime(t)) for t in (last, last + CRASH_BACKOFF_S))
    reason = f" ({record['reason']})" if record.get("reason") else ""
    return (
        f"the daemon crashed {times} in a row, last at {at}{reason}: "
        f"searches run in-process until {until} instead of starting one; "
        f"{os.path.join(log_dir(), 'daemon.log')} ends with what it said last; "
        f"`rm {_crash_path()}` lets the next search start one"
    )


def _raise_if_backing_off() -> None:
    record = backing_off()
    if record is not None:
        raise DaemonBackingOff(backoff_line(record))


def daemon_or_fallback(
    body: dict[str, Any], timeout: float, *, daemon: bool = True, start: bool = True,
    unavailable: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """POST /search to the daemon (started when absent, when `start`), else the same search in a
    one-off process (fallback_search). `unavailable`: told why the daemon could not be used before
    the fallback runs (when the daemon was to be started: else the fallback is the plan, not a
    failure). With `start` off a daemon is started in the background for the next call."""
    if daemon:
        try:
            return call("POST", "/search", body, timeout=timeout, start=start)  # type: ignore[no-any-return]
        except DaemonUnavailable as exc:
            if start and unavailable is not None:
                unavailable(str(exc))
    response = fallback_search(body)
    if daemon and not start:  # a registered folder: the next call finds the daemon warm
        start_in_background()
    return response


def daemon_allowed() -> bool:
    """QMD_NO_DAEMON=1: every search in-process, never through a daemon (ai-search, MCP)."""
    return os.environ.get("QMD_NO_DAEMON") != "1"


def fallback_search(body: dict[str, Any], timeout: float = 600.0) -> dict[str, Any]:
    """The same search in a one-off process (`python -m qmd_daemon.daemon search`): slower, but
    needs nothing running. Its stderr is the user's: what it says while it works (an index
    upgrade's steps, minutes on a big index, and their progress bar) is seen as it happens; its
    stdout is the JSON answer alone."""
    import subprocess

    request = json.dumps(body)  # ASCII: the child's stdin decodes it whatever its locale
    piped = len(request) > MAX_REQUEST_ARG  # a long query from stdin: E2BIG as an argument
    argv = [*daemon_python(), "search", "--request", "-" if piped else request]
    try:
        # never the caller's own stdin: under `qmd-daemon mcp` that is the JSON-RPC stream
        feed: dict[str, Any] = {"input": request} if piped else {"stdin": subprocess.DEVNULL}
        proc = subprocess.run(argv, **feed, stdout=subprocess.PIPE, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise DaemonUnavailable(f"in-process search failed to run: {exc}") from None
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        failed = f"in-process search failed (exit {proc.returncode}; its message is above)"
        raise DaemonUnavailable(failed) from None
    if isinstance(data, dict) and "error" in data:
        err = data["error"]
        raise DaemonError(400, str(err.get("code")), str(err.get("message")))
    return data
