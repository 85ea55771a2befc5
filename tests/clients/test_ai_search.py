"""`ai-search` end to end: real subprocesses, a real daemon started on demand, the fallback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from qmd_daemon.daemon.state import DaemonState, write_state
from qmd_daemon.store.schema import SCHEMA_VERSION
from tests.conftest import BOX_PY, MODELS_DIR
from tests.daemon.support import (
    CLIENTS,
    env_for,
    hold_daemon_lock,
    make_repo,
    pid_running,
    run_client,
    start_serve,
    state_of,
    wait_for,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj")


def search(home: Path, repo: Path, *args: str, **env: str) -> list[dict]:
    proc = run_client("ai_search.py", *args, home=home, cwd=repo, **env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_starts_the_daemon_and_answers_with_repository_paths(daemon_home: Path, repo: Path) -> None:
    hits = search(daemon_home, repo / "src", "parse cookie header")
    assert hits and hits[0]["path"] == "src/client.py"
    assert set(hits[0]) == {"path", "line", "end_line", "score", "snippet", "collection"}
    assert hits[0]["collection"] == "repo-proj" and 0 <= hits[0]["score"] <= 1
    state = state_of(daemon_home)
    assert state is not None and pid_running(state["pid"])
    assert search(daemon_home, repo, "parse cookie header") == hits
    assert state_of(daemon_home)["pid"] == state["pid"]  # the same daemon answered
    assert search(daemon_home, repo, "zzqqxx_nothing_like_it") == []
    assert (daemon_home / "state" / "logs" / "daemon.log").exists()


def test_sees_edits_at_once_and_reports_failures(daemon_home: Path, repo: Path) -> None:
    search(daemon_home, repo, "cookie")
    (repo / "src" / "fresh.py").write_text("def brand_new_helper_function():\n    return 42\n")
    hits = search(daemon_home, repo, "brand_new_helper_function", "-n", "3")
    assert hits[0]["path"] == "src/fresh.py"
    proc = run_client("ai_search.py", "x", "-c", "no-such-collection", home=daemon_home, cwd=repo)
    assert proc.returncode != 0 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "no-such-collection" in proc.stderr
    proc = run_client("ai_search.py", "x", "--repo", str(repo / "missing"), home=daemon_home, cwd=repo)
    assert proc.returncode == 2 and proc.stderr == f"ai-search: error: {repo / 'missing'} does not exist\n"
    a_file = str(repo / "src" / "client.py")
    proc = run_client("ai_search.py", "x", "--repo", a_file, home=daemon_home, cwd=repo)
    assert proc.returncode == 2 and proc.stderr.endswith("client.py is not a folder\n")


def test_recovers_after_kill_9(daemon_home: Path, repo: Path) -> None:
    first = search(daemon_home, repo, "TCPConnector acquire")
    old = state_of(daemon_home)
    os.kill(old["pid"], signal.SIGKILL)
    wait_for(lambda: not pid_running(old["pid"]), timeout=10)
    assert state_of(daemon_home)["token"] == old["token"]  # the stale file is still there
    assert search(daemon_home, repo, "TCPConnector acquire") == first
    new = state_of(daemon_home)
    assert new["pid"] != old["pid"] and new["token"] != old["token"] and pid_running(new["pid"])


def test_twenty_concurrent_calls_from_cold(daemon_home: Path, repo: Path) -> None:
    env = env_for(daemon_home)
    argv = [sys.executable, str(CLIENTS / "ai_search.py"), "connection pool", "--json"]

    def one(_: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=90)

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(one, range(20)))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results if r.returncode]
    outputs = {r.stdout for r in results}
    assert len(outputs) == 1 and json.loads(outputs.pop())
    assert not any("in-process" in r.stderr for r in results)  # all were served by one daemon
    assert not (daemon_home / "state" / "spawn.marker").exists()


def test_fallback_without_a_daemon(daemon_home: Path, repo: Path, tmp_path: Path) -> None:
    fallback = search(daemon_home, repo, "parse cookie header", "--no-daemon")
    assert fallback and fallback[0]["path"] == "src/client.py"
    assert state_of(daemon_home) is None and not (daemon_home / "state" / "logs" / "daemon.log").exists()
    assert search(daemon_home, repo, "parse cookie header", QMD_NO_DAEMON="1") == fallback
    # a daemon that cannot start: the client says so on stderr and still answers
    broken = tmp_path / "broken-python"
    broken.write_text(f'#!/bin/sh\nif [ "$3" = serve ]; then exit 3; fi\nexec {sys.executable} "$@"\n')
    broken.chmod(0o755)
    proc = run_client(
        "ai_search.py",
        "parse cookie header",
        home=daemon_home,
        cwd=repo,
        QMD_DAEMON_PYTHON=str(broken),
        QMD_START_TIMEOUT="2",
    )
    assert proc.returncode == 0, proc.stderr
    assert "searching in-process" in proc.stderr
    assert json.loads(proc.stdout) == fallback
    # and with the daemon the answer is the same
    assert search(daemon_home, repo, "parse cookie header") == fallback


@pytest.mark.parametrize("where", ["daemon", "in-process"])
def test_a_repository_whose_index_was_dropped_is_read_again_by_the_next_search(
    daemon_home: Path, repo: Path, where: str
) -> None:
    # the index deleted (docs/install.md: "delete ~/.cache/qmd-daemon by hand to drop the index"),
    # or a `collection add` stopped by Ctrl-C: index.yml and the client's stamp stayed, no file had
    # changed, so no refresh was asked for and every search there answered [] until one did (the
    # stamp holds the listing's signature after an answer from a process that did not watch it)
    first = [hit["path"] for hit in search(daemon_home, repo, "parse cookie header", "--no-daemon")]
    assert first and first[0] == "src/client.py"
    shutil.rmtree(daemon_home / "cache")
    flags = ["--no-daemon"] if where == "in-process" else []
    assert [hit["path"] for hit in search(daemon_home, repo, "parse cookie header", *flags)] == first


@pytest.mark.parametrize("damage", ["deleted", "garbled", "wrong token"])
def test_a_daemon_whose_state_file_went_is_found_again(daemon_home: Path, repo: Path, damage: str) -> None:
    # the daemon lived on without its state file (deleted by hand, a clean-up of the state folder):
    # each ai-search started a daemon that waited 20 s on the live one's lock, then searched
    # in-process, until the live one idled out (30 minutes)
    search(daemon_home, repo, "parse cookie header")
    pid = state_of(daemon_home)["pid"]
    state_file = daemon_home / "state" / "daemon.json"
    if damage == "deleted":
        state_file.unlink()
    elif damage == "garbled":
        state_file.write_text("{garbage")
    else:  # the client was told the daemon "is running but does not answer" and searched in-process
        state_file.write_text(json.dumps(dict(json.loads(state_file.read_text()), token="x" * 43)))
        wait_for(lambda: (state_of(daemon_home) or {}).get("token") not in (None, "x" * 43), timeout=10)
    started = time.monotonic()
    proc = run_client("ai_search.py", "parse cookie header", home=daemon_home, cwd=repo)
    assert proc.returncode == 0 and "in-process" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)[0]["path"] == "src/client.py"
    assert time.monotonic() - started < 10
    assert state_of(daemon_home)["pid"] == pid  # the same daemon answered


def test_a_daemon_that_fails_at_start_is_not_waited_for(daemon_home: Path, repo: Path) -> None:
    # an index replaced by junk: the daemon wrote its one line to daemon.log and exited, and each
    # ai-search still waited out the whole start timeout before saying "did not answer within 20s"
    index = daemon_home / "cache" / "index.sqlite"
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_bytes(b"junk line\n")
    began = time.monotonic()
    proc = run_client("ai_search.py", "parse cookie header", home=daemon_home, cwd=repo,
                      QMD_START_TIMEOUT="30", timeout=120)  # fmt: skip
    assert time.monotonic() - began < 25, "the start timeout (30 s) was waited out"
    assert proc.returncode == 1 and proc.stdout == ""
    # the 3-second notice ("waiting for the index of ...") is said too when a loaded machine
    # takes that long to start and fail the daemon and the fallback
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("ai-search: waiting for ")]
    assert lines[0].startswith(
        "ai-search: daemon unavailable (the daemon exited at start: qmd-daemon: error: index "
        f"{index} is not a usable SQLite database (file is not a database)"
    ), proc.stderr
    assert lines[1].startswith("ai-search: error: index ") and len(lines) == 2


def test_a_daemon_that_stops_at_once_is_not_waited_for(daemon_home: Path, repo: Path, tmp_path: Path) -> None:
    # a serve that exits 0 (an idle exit or a shutdown before this client asked) was taken for one
    # that found another daemon healthy: ai-search waited out its whole start timeout (20 s)
    stopping = tmp_path / "stopping-python"
    stopping.write_text(
        "#!/bin/sh\n"
        'if [ "$3" = serve ]; then echo "qmd-daemon stopped (idle for 0 minutes)"; exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    stopping.chmod(0o755)
    proc = run_client("ai_search.py", "parse cookie header", home=daemon_home, cwd=repo,
                      QMD_DAEMON_PYTHON=str(stopping), QMD_START_TIMEOUT="3600", timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith(
        "ai-search: daemon unavailable (the daemon stopped at start: qmd-daemon stopped (idle for 0 "
        "minutes)); searching in-process"
    ), proc.stderr
    assert json.loads(proc.stdout)[0]["path"] == "src/client.py"


def test_a_daemon_starting_after_a_killed_one_is_waited_for(daemon_home: Path, repo: Path) -> None:
    """kill -9 leaves the state file; while one client's new daemon starts (it holds the lock,
    another pid than the file names), a second client took it for the dead one, hung, and
    searched in-process (bench/soak.py: searches around a kill mid-embed)."""
    dead = start_serve(daemon_home)
    wait_for(lambda: (state_of(daemon_home) or {}).get("pid") == dead.pid, timeout=60)
    dead.kill()
    dead.wait(timeout=30)
    starting = hold_daemon_lock(daemon_home, 1.0, "serve")
    proc = run_client("ai_search.py", "parse cookie header", home=daemon_home, cwd=repo, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "in-process" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)[0]["path"] == "src/client.py"
    assert state_of(daemon_home)["pid"] != dead.pid
    assert starting.poll() in (None, 0)  # serving, or gone once it found the other one answering


def test_a_killed_daemon_still_letting_go_of_its_lock_is_not_taken_for_a_hung_one(
    daemon_home: Path, repo: Path
) -> None:
    """kill -9 of a daemon with its models loaded: its port fails at once, its lock goes only
    once the kernel has freed its memory. A client asking then took it for a hung daemon and
    searched in-process (bench/soak.py: 2 of 4 searches around a kill mid-embed)."""
    dying = hold_daemon_lock(daemon_home, 0.5, "exit")  # holds the lock with its own pid, then goes
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there any more
    dead = DaemonState(
        port=port, token="t" * 43, pid=dying.pid, version="0", started_at=0, schema=SCHEMA_VERSION
    )
    write_state(daemon_home / "state", dead)
    proc = run_client("ai_search.py", "parse cookie header", home=daemon_home, cwd=repo, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "in-process" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)[0]["path"] == "src/client.py"
    assert state_of(daemon_home)["pid"] != dying.pid


def test_json_is_utf8_where_the_locale_is_not(daemon_home: Path, tmp_path: Path) -> None:
    """Agents on Windows read ai-search through a pipe, which Python gives the ANSI code page;
    PYTHONIOENCODING=cp1252 makes the same stream here. The snippet comes out whole, as UTF-8."""
    boxes = make_repo(tmp_path / "boxes", {"box.py": BOX_PY})
    proc = run_client(
        "ai_search.py", "draw a box", "--no-daemon", home=daemon_home, cwd=boxes, PYTHONIOENCODING="cp1252"
    )
    assert proc.returncode == 0, proc.stderr
    snippet = json.loads(proc.stdout)[0]["snippet"]
    assert "\u250c\u2500\u2510" in snippet and "\u4e2d\u6587" in snippet


REPORT = """Crash when the cookie header has no '=' in it:

    Traceback (most recent call last):
      File "app.py", line 3, in <module>
        jar = parse_cookie_header(`$HEADER`)
    ValueError: dictionary update sequence element #0 has length 1; 2 is required
"""


def test_a_bug_report_on_stdin_is_the_query(daemon_home: Path, repo: Path, tmp_path: Path) -> None:
    """`-` reads the query from stdin: quotes, backticks and `$` reach the search as written,
    which a shell argument gets right only with careful quoting (agents paste tracebacks)."""
    def run(*args: str, stdin: str | int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(CLIENTS / "ai_search.py"), *args, "--no-daemon"], cwd=repo,
            env=env_for(daemon_home), input=stdin if isinstance(stdin, str) else None,
            stdin=None if isinstance(stdin, str) else stdin, capture_output=True, text=True, timeout=90,
        )  # fmt: skip

    proc = run("-", stdin=REPORT)
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert hits[0]["path"] == "src/client.py" and "parse_cookie_header" in hits[0]["snippet"]
    # the same text as one argument gives the same answer: stdin is only another way in
    assert json.loads(run(REPORT, stdin="").stdout) == hits
    assert (empty := run("-", stdin=" \n")).returncode == 2 and "empty query" in empty.stderr
    huge = run("-", stdin="cookie " * 200_000)
    assert huge.returncode == 2 and "over 1,000,000 characters" in huge.stderr.strip().splitlines()[-1]

    import pty

    leader, follower = pty.openpty()
    try:  # a terminal is refused at once, not waited on (an agent's pseudo-terminal would hang)
        proc = run("-", stdin=follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 2 and "stdin, which is a terminal" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_long_report_on_stdin_reaches_the_daemon_and_a_one_off(daemon_home: Path, repo: Path) -> None:
    """`-` takes up to 1,000,000 characters, but the daemon read 1 MiB of a request ("Request
    Entity Too Large" for a 780,000-character report of accented text, each character 6 bytes
    as JSON) and the one-off search took the request as one argument (E2BIG past 128 KiB on
    Linux). Both now answer; the question is the report's head, the rest only bulk."""
    def run(report: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(CLIENTS / "ai_search.py"), "-", "--json", *args], cwd=repo,
            env=env_for(daemon_home), input=report, capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    accented = "parse cookie header\n" + "é café crème\n" * 60_000  # 780,020 characters
    for args in ((), ("--no-daemon",)):
        proc = run(accented, *args)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)[0]["path"] == "src/client.py", args
    assert state_of(daemon_home) is not None  # the first run went through a daemon


def test_table_on_a_terminal(daemon_home: Path, repo: Path) -> None:
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.run(
        [sys.executable, str(CLIENTS / "ai_search.py"), "cookie header", "--no-daemon"],
        cwd=repo,
        env=env_for(daemon_home),
        stdout=follower,
        stderr=subprocess.PIPE,
        timeout=90,
    )
    os.close(follower)
    out = os.read(leader, 65536).decode()
    os.close(leader)
    assert proc.returncode == 0
    assert "src/client.py:" in out and " | " in out and not out.lstrip().startswith("[")


def test_client_imports_stay_cheap(daemon_home: Path, repo: Path) -> None:
    search(daemon_home, repo, "cookie")  # daemon up, stamp written
    proc = run_client("ai_search.py", "cookie", home=daemon_home, cwd=repo, PYTHONPROFILEIMPORTTIME="1")
    assert proc.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    heavy = {"ssl", "http.client", "urllib.request", "subprocess", "asyncio", "typing", "email"}
    # argparse, json and zlib are all it needs, and _hashlib (OpenSSL's HMAC, ~2 ms) to check the
    # daemon's proof before it sends the token: not hashlib, which loads every constructor (~10 ms)
    heavy |= {"hashlib", "shutil"}
    assert not imported & heavy, imported & heavy
    assert not any(name.startswith("qmd_daemon") for name in imported)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the daemon vouches for roots with inotify")
def test_a_watched_repository_needs_no_git_status(daemon_home: Path, repo: Path, tmp_path: Path) -> None:
    calls = tmp_path / "git-calls"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # each line: who ran git (the client's own check, or the daemon's scan)
    (bindir / "git").write_text(
        f'#!/bin/sh\ntr "\\0" " " < /proc/$PPID/cmdline >> "{calls}"\necho >> "{calls}"\n'
        f'exec "{shutil.which("git")}" "$@"\n'
    )
    (bindir / "git").chmod(0o755)
    path = f"{bindir}{os.pathsep}{os.environ['PATH']}"
    assert search(daemon_home, repo, "cookie", PATH=path)
    assert "ai_search.py" in calls.read_text()  # the first call checks with git; the daemon then vouches
    stamps = list((daemon_home / "state" / "repos").glob("*.json"))
    assert len(stamps) == 1 and json.loads(stamps[0].read_text())["watched"] is True
    calls.write_text("")
    (repo / "src" / "fresh.py").write_text("def brand_new_helper_function():\n    return 42\n")
    hits = search(daemon_home, repo, "brand_new_helper_function", "-n", "3", PATH=path)
    assert hits[0]["path"] == "src/fresh.py"  # written just before: the daemon took it in first
    assert "ai_search.py" not in calls.read_text()
    # the in-process fallback has no watcher: it refreshes
    (repo / "src" / "later.py").write_text("def added_with_no_daemon():\n    return 1\n")
    hits = search(daemon_home, repo, "added_with_no_daemon", "--no-daemon", PATH=path)
    assert hits[0]["path"] == "src/later.py"


def test_the_fallback_shows_an_index_upgrade_as_it_runs(daemon_home: Path, repo: Path) -> None:
    """An upgrade's schema steps take minutes on a big index: the in-process fallback's user sees
    them announced on stderr (stdout stays the JSON answer alone)."""
    first = search(daemon_home, repo, "parse cookie header", "--no-daemon")
    index = daemon_home / "cache" / "index.sqlite"
    conn = sqlite3.connect(index)  # back to schema 3: as the code before term_stats left it
    conn.execute("DROP TABLE term_stats")
    conn.execute("DROP TABLE file_stems")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    proc = run_client("ai_search.py", "parse cookie header", "--no-daemon", home=daemon_home, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert f"upgrading the index {index} from schema 3 to" in proc.stderr
    assert json.loads(proc.stdout) == first


BAD_NUMBERS = [
    ["--wait", "nan"], ["--wait", "-1"], ["--min-score", "nan"], ["--min-score", "5"], ["--max-tokens", "-3"],
]  # fmt: skip


@pytest.mark.parametrize("bad", BAD_NUMBERS)
def test_bad_numbers_are_one_line_and_start_no_daemon(daemon_home: Path, repo: Path, bad: list[str]) -> None:
    proc = run_client("ai_search.py", "cookie", *bad, home=daemon_home, cwd=repo)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("ai-search: error: ") and len(proc.stderr.strip().splitlines()) == 1
    assert state_of(daemon_home) is None, "no daemon is started for a request that cannot be sent"


def test_an_answer_from_an_index_still_catching_up_says_so_on_stderr(
    daemon_home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch, small_models: dict[str, Path]
) -> None:
    # an agent reads ai-search through a pipe: the note that the index lags its edits was printed
    # only on a terminal, so a search that gave up waiting (--wait) looked current (first-hour-9)
    from qmd_daemon.locks import file_lock, writer_lock_path
    from qmd_daemon.settings import Settings

    # with vectors pending (the small profile) but the refresh done, the answer is current: the
    # pending-vectors line says what lags, and nothing claims edits are missing
    (daemon_home / "config").mkdir(parents=True)
    (daemon_home / "config" / "index.yml").write_text("models: {profile: small}\n")
    models = {"QMD_MODELS_DIR": str(MODELS_DIR)}
    first = run_client("ai_search.py", "cookie", home=daemon_home, cwd=repo, **models)
    assert first.returncode == 0 and "deep vectors yet" in first.stderr, first.stderr
    assert "catching up" not in first.stderr, first.stderr
    monkeypatch.setenv("QMD_DAEMON_HOME", str(daemon_home))
    monkeypatch.delenv("QMD_INDEX_PATH", raising=False)
    with file_lock(writer_lock_path(Settings.from_env().index_path)):  # the daemon's refresh cannot finish
        (repo / "src" / "fresh.py").write_text("def brand_new_helper_function():\n    return 42\n")
        query = ("brand_new_helper_function", "--wait", "1")
        proc = run_client("ai_search.py", *query, home=daemon_home, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert "ai-search: the index is still catching up with recent changes" in proc.stderr
    skill = (Path(__file__).parents[2] / "skills" / "semantic-search" / "SKILL.md").read_text()
    assert "`the index is still catching up with recent changes`" in skill  # the agent knows it
    assert isinstance(json.loads(proc.stdout), list)


def test_a_first_index_not_finished_within_the_wait_says_none_of_the_repository_is_in(
    daemon_home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the agentwalk: a repository nobody had edited got "the latest edits may be missing" when its
    # first index outlasted --wait; a first index commits whole, so none of its files were there
    from qmd_daemon.locks import file_lock, writer_lock_path
    from qmd_daemon.settings import Settings

    monkeypatch.setenv("QMD_DAEMON_HOME", str(daemon_home))
    monkeypatch.delenv("QMD_INDEX_PATH", raising=False)
    with file_lock(writer_lock_path(Settings.from_env().index_path)):  # the first index cannot finish
        proc = run_client("ai_search.py", "parse cookie header", "--wait", "1", home=daemon_home, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert f"ai-search: the first index of {repo} is not finished yet: these results hold none" in proc.stderr
    assert "catching up with recent changes" not in proc.stderr
    assert not [hit for hit in json.loads(proc.stdout) if hit["path"].startswith("src/")]
    skill = (Path(__file__).parents[2] / "skills" / "semantic-search" / "SKILL.md").read_text()
    assert "`the first index of ... is not finished yet`" in skill


def test_every_option_in_help_says_what_it_does_and_the_defaults_it_names_are_the_searchs() -> None:
    # `ai-search --help` showed `--min-score MIN_SCORE` with no word on it (first-hour-9)
    from clients.ai_search import _parser
    from qmd_daemon.search.pipeline import SearchOptions

    parser = _parser()
    assert all(action.help for action in parser._actions if action.option_strings)
    helps = {action.dest: str(action.help) for action in parser._actions}
    defaults = SearchOptions()
    assert f"default {defaults.max_tokens}" in helps["max_tokens"]
    assert f"default {defaults.min_score:g}" in helps["min_score"]
    assert "default: off" in helps["rerank"] and defaults.rerank is False


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_every_state_file_a_first_search_leaves_is_owner_only(daemon_home: Path, repo: Path) -> None:
    # a fresh HOME after install + ai-search (first-hour-9): the repository stamp
    # (state/repos/*.json) and the logs were 0644, their folder 0755
    import stat

    search(daemon_home, repo, "cookie")
    search(daemon_home, repo, "cookie")  # the stamp is written after the first answer
    state = daemon_home / "state"
    assert list((state / "repos").iterdir()) and (state / "logs" / "daemon.log").exists()
    modes = {str(p.relative_to(state)): stat.S_IMODE(p.stat().st_mode) for p in [state, *state.rglob("*")]}
    assert {p: m for p, m in modes.items() if m not in (0o600, 0o700)} == {}


def test_the_notice_never_prints_once_the_answer_is_in(capsys: pytest.CaptureFixture[str]) -> None:
    """The notice's wording asks the daemon (/health, up to a second); an answer that came
    meanwhile was printed first and the notice after it, saying the call still waited. Here the
    wording is asked, the call ends while it is being worded, and only then is it handed over:
    events, no sleeps racing."""
    import threading

    from clients.ai_search import SlowNotice

    asked, answer_in = threading.Event(), threading.Event()

    def wording() -> str:
        asked.set()
        assert answer_in.wait(10)
        return "the daemon is running the search"

    notice = SlowNotice(0, wording)
    with notice:
        assert asked.wait(10)  # the watcher woke and is wording its line
    answer_in.set()  # the call is over (results printed); now the line is ready
    assert notice.join(10)  # the watcher has ended: nothing more can print
    assert capsys.readouterr().err == ""


def test_a_slow_call_says_once_what_it_waits_for_and_a_quick_one_says_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import time

    from clients.ai_search import SlowNotice

    err = ""
    with SlowNotice(0, "waiting for the index"):  # slower than 0 s: said while the call still runs
        deadline = time.monotonic() + 10
        while "waiting" not in err and time.monotonic() < deadline:
            time.sleep(0.01)
            err += capsys.readouterr().err
    assert err == "ai-search: waiting for the index\n"
    with SlowNotice(0.2, "waiting for the index"):
        pass  # done long before 0.2 s: the notice is called off
    time.sleep(0.5)  # one not called off would be printed by now
    assert capsys.readouterr().err == ""
