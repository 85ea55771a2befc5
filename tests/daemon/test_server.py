"""The daemon in-process: a real aiohttp server on 127.0.0.1, real engines, an injected clock."""

from __future__ import annotations

import asyncio
import contextlib
import json
import stat
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from qmd_daemon.daemon.server import MIN_IDLE_S, Daemon, split_host
from qmd_daemon.daemon.state import read_state
from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings
from tests.conftest import SAMPLE_PY, committed_repository, git
from tests.daemon.support import make_repo

EVENT_CEILING_S = 60.0  # how long a test waits for an event at most; the event comes far sooner


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def http():
    async with aiohttp.ClientSession() as session:
        yield session


def url(d: Daemon, path: str) -> str:
    return f"http://127.0.0.1:{d.port}{path}"


def auth(d: Daemon) -> dict[str, str]:
    return {"Authorization": f"Bearer {d.token}"}


@contextlib.asynccontextmanager
async def reader_busy(d: Daemon) -> AsyncIterator[asyncio.Future[Any]]:
    """The daemon's reader thread busy with an earlier step (a real blocking call) until the block
    ends: a test asserts what happened meanwhile, not how long it took."""
    free = threading.Event()
    busy = asyncio.ensure_future(d._read(free.wait, EVENT_CEILING_S))
    try:
        yield busy
    finally:
        free.set()
        await busy


async def call(
    http: aiohttp.ClientSession, d: Daemon, method: str, path: str, body: Any = None, **headers: str
) -> tuple[int, Any]:
    hdrs = {**auth(d), **headers}
    async with http.request(method, url(d, path), json=body, headers=hdrs) as resp:
        return resp.status, await resp.json()


async def test_state_file_is_private_and_removed_on_close(home: Path) -> None:
    d = Daemon(Settings.from_env(), watch=False)
    port = await d.start()
    path = home / "state" / "daemon.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert set(data) == {"port", "token", "pid", "version", "started_at", "schema", "code"}
    assert data["port"] == port and data["token"] == d.token
    assert stat.S_IMODE((home / "state").stat().st_mode) == 0o700
    await d.close()
    assert not path.exists()


async def test_token_is_required_and_nothing_runs_without_it(
    daemon: Daemon, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "proj")
    for headers in (
        {},
        {"Authorization": "Bearer nope"},
        {"X-QMD-Token": daemon.token[:-1]},
        {"Authorization": daemon.token},
    ):
        async with http.post(url(daemon, "/refresh"), json={"path": str(repo)}, headers=headers) as resp:
            assert resp.status == 401
            assert (await resp.json())["error"]["code"] == "unauthorized"
    for path in ("/health", "/status", "/nowhere"):
        async with http.get(url(daemon, path)) as resp:
            assert resp.status == 401
    assert daemon.jobs.idle and daemon.jobs.snapshot()["recent"] == []
    assert daemon.reader.collections() == {}
    async with http.get(url(daemon, "/health"), headers={"X-QMD-Token": daemon.token}) as resp:
        assert resp.status == 200 and (await resp.json())["ok"] is True
    async with http.get(url(daemon, "/health"), headers=auth(daemon)) as resp:
        assert resp.status == 200


async def test_challenge_proves_the_token_without_revealing_it(
    daemon: Daemon, http: aiohttp.ClientSession
) -> None:
    """The one endpoint open without the token: a client asks it before it sends the token."""
    from clients import _qmd_client as qc

    nonce = "ab" * 16
    idle_since = daemon._last_activity
    async with http.get(url(daemon, f"/challenge?nonce={nonce}")) as resp:
        assert resp.status == 200
        raw = await resp.text()
    assert daemon.token not in raw
    assert qc._proof_ok(daemon.token, daemon.port, nonce, json.loads(raw)["proof"])
    assert daemon._last_activity == idle_since  # a stranger's challenges keep no idle daemon up
    for bad in ("", "xyz", "AB" * 16, "ab" * 8, "ab" * 65):
        async with http.get(url(daemon, "/challenge"), params={"nonce": bad}) as resp:
            assert resp.status == 400
    async with http.get(url(daemon, f"/challenge?nonce={nonce}"), headers={"Host": "evil.example"}) as resp:
        assert resp.status == 403


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:{port}", True),
        ("localhost:{port}", True),
        ("[::1]:{port}", True),
        ("LOCALHOST", True),
        ("evil.example:{port}", False),
        ("127.0.0.1.nip.io:{port}", False),
        ("127.0.0.1:1", False),
        ("localhost.:{port}", False),
    ],
)
async def test_host_guard(daemon: Daemon, http: aiohttp.ClientSession, host: str, allowed: bool) -> None:
    status, body = await call(http, daemon, "GET", "/health", Host=host.format(port=daemon.port))
    assert status == (200 if allowed else 403)
    if not allowed:
        assert body["error"]["code"] == "forbidden_host"


async def test_foreign_origin_is_refused(daemon: Daemon, http: aiohttp.ClientSession) -> None:
    status, _ = await call(http, daemon, "GET", "/health", Origin="http://evil.example")
    assert status == 403
    status, _ = await call(http, daemon, "GET", "/health", Origin=f"http://localhost:{daemon.port}")
    assert status == 200


def test_split_host() -> None:
    assert split_host("[::1]:80") == ("[::1]", "80")
    assert split_host("[::1]") == ("[::1]", None)
    assert split_host("LocalHost:9") == ("localhost", "9")


async def test_errors_are_json(daemon: Daemon, http: aiohttp.ClientSession) -> None:
    async with http.post(url(daemon, "/search"), data=b"{not json", headers=auth(daemon)) as resp:
        assert resp.status == 400
        assert (await resp.json())["error"]["code"] == "bad_request"
    assert (await call(http, daemon, "POST", "/search", {"query": "  "}))[0] == 400
    assert (await call(http, daemon, "POST", "/search", {"query": "x", "limit": 0}))[0] == 400
    assert (await call(http, daemon, "POST", "/search", {"query": "x", "budget_ms": -1}))[0] == 400
    status, body = await call(http, daemon, "POST", "/search", {"query": "x", "collections": ["nope"]})
    assert status == 404 and body["error"]["code"] == "not_found"
    # the CLI's line, with its hint (ai-search through the daemon said it without)
    assert body["error"]["message"] == "no collection named 'nope' (see `qmd-daemon collection list`)"
    status, body = await call(http, daemon, "POST", "/search", {"query": "x", "path": "relative/dir"})
    assert status == 400
    status, body = await call(http, daemon, "GET", "/nowhere")
    assert status == 404 and set(body["error"]) == {"code", "message"}
    status, body = await call(http, daemon, "GET", "/search")
    assert status == 405 and body["error"]["code"] == "method_not_allowed"


async def test_search_registers_the_repository_and_answers(
    daemon: Daemon, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "proj")
    status, body = await call(
        http, daemon, "POST", "/search", {"query": "parse cookie header", "path": str(repo)}
    )
    assert status == 200, body
    assert body["collection"] == "repo-proj" and body["created"] is True and body["refreshed"] is True
    assert body["roots"] == {"repo-proj": str(repo.resolve())}
    assert body["hits"][0]["path"] == "src/client.py"
    assert {"path", "line", "end_line", "score", "snippet"} <= set(body["hits"][0])
    assert body["search_ms"] <= body["took_ms"]
    # a sub-folder resolves to the same collection; nothing new is registered
    status, again = await call(
        http, daemon, "POST", "/search", {"query": "cookie", "path": str(repo / "src")}
    )
    assert again["collection"] == "repo-proj" and again["created"] is False
    status, status_body = await call(http, daemon, "GET", "/status")
    assert status == 200
    assert status_body["daemon"]["port"] == daemon.port
    assert [c["name"] for c in status_body["collections"]] == ["repo-proj"]
    assert "models" in status_body and "vectors" in status_body and "index" in status_body


async def test_refresh_and_embed_jobs(daemon: Daemon, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    status, body = await call(
        http, daemon, "POST", "/refresh", {"path": str(repo), "wait": 30, "embed": True}
    )
    assert status == 200 and body["done"] is True, body
    kinds = [j["kind"] for j in body["jobs"]]
    assert kinds == ["refresh", "embed"]
    assert body["jobs"][0]["result"]["reports"][0]["added"] == 3
    status, embed = await call(http, daemon, "POST", "/embed", {"collection": "repo-proj", "wait": 30})
    assert status == 200 and embed["done"] and embed["jobs"][0]["state"] == "done"
    status, job = await call(http, daemon, "GET", f"/jobs/{embed['jobs'][0]['id']}")
    assert status == 200 and job["kind"] == "embed"
    assert (await call(http, daemon, "POST", "/embed", {"collection": "nope"}))[0] == 404


async def test_refresh_flags_are_json_booleans(
    daemon: Daemon, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    # "create": "false" was read as true and registered the folder (review finding)
    repo = make_repo(tmp_path / "proj")
    for key in ("create", "embed"):
        status, body = await call(http, daemon, "POST", "/refresh", {"path": str(repo), key: "false"})
        assert status == 400 and body["error"]["message"] == f"'{key}' must be true or false", body
    status, body = await call(http, daemon, "POST", "/refresh", {"path": str(repo), "create": False})
    assert status == 404, body  # not registered, and not created
    assert (await call(http, daemon, "GET", "/status"))[1]["collections"] == []


async def test_searches_are_served_while_a_refresh_runs(
    daemon: Daemon, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "proj")
    await call(http, daemon, "POST", "/refresh", {"path": str(repo), "wait": 30})
    (repo / "src" / "late.py").write_text("def freshly_added_function():\n    return 1\n")
    updating, release = threading.Event(), threading.Event()
    real_update = daemon.writer.update

    def held_update(*args: Any, **kwargs: Any) -> Any:
        updating.set()
        release.wait(EVENT_CEILING_S)  # the refresh holds the writer until the searches below are done
        return real_update(*args, **kwargs)

    daemon.writer.update = held_update  # type: ignore[method-assign]
    status, body = await call(http, daemon, "POST", "/refresh", {"collection": "repo-proj"})
    job_id = body["jobs"][0]["id"]
    assert await asyncio.to_thread(updating.wait, EVENT_CEILING_S), "the refresh never started"
    results = await asyncio.gather(
        *[
            call(http, daemon, "POST", "/search", {"query": "TCPConnector", "path": str(repo)})
            for _ in range(10)
        ]
    )
    assert all(s == 200 and b["hits"] and b["stale"] is True for s, b in results)
    assert daemon.jobs.get(job_id).state == "running"  # answered while the refresh held the writer
    release.set()
    status, body = await call(
        http,
        daemon,
        "POST",
        "/search",
        {"query": "freshly_added_function", "path": str(repo), "refresh": True},
    )
    assert body["refreshed"] is True and body["stale"] is False
    assert body["hits"][0]["path"] == "src/late.py"


async def test_idle_exit_with_an_injected_clock(home: Path) -> None:
    clock = FakeClock()
    d = Daemon(Settings.from_env(), clock=clock, idle_minutes=0.5, watch=False, check_interval=0.01)
    await d.start()
    waiter = asyncio.ensure_future(d.wait_stopped())
    try:
        clock.now += 20
        await asyncio.sleep(0.1)
        assert not waiter.done()
        async with aiohttp.ClientSession() as http:  # a request restarts the countdown
            await call(http, d, "GET", "/health")
        clock.now += 20
        await asyncio.sleep(0.1)
        assert not waiter.done() and read_state(home / "state") is not None
        clock.now += 11
        await asyncio.wait_for(waiter, EVENT_CEILING_S)
    finally:
        await d.close()
    assert d.stop_reason is not None and "idle" in d.stop_reason
    assert not (home / "state" / "daemon.json").exists()


async def test_idle_minutes_zero_still_lets_the_starting_client_ask(home: Path) -> None:
    """QMD_IDLE_MINUTES=0 stopped the daemon the moment it listened: the client that started it
    waited out its start timeout and searched in-process, on every call."""
    clock = FakeClock()
    d = Daemon(Settings.from_env(), clock=clock, idle_minutes=0, watch=False, check_interval=0.01)
    await d.start()
    waiter = asyncio.ensure_future(d.wait_stopped())
    try:
        await asyncio.sleep(0.1)
        assert not waiter.done()
        async with aiohttp.ClientSession() as http:
            status, _ = await call(http, d, "GET", "/health")
        assert status == 200
        clock.now += MIN_IDLE_S
        await asyncio.wait_for(waiter, EVENT_CEILING_S)
    finally:
        await d.close()
    assert d.stop_reason is not None and "idle" in d.stop_reason


async def test_shutdown_endpoint(home: Path) -> None:
    d = Daemon(Settings.from_env(), watch=False)
    await d.start()
    waiter = asyncio.ensure_future(d.wait_stopped())
    async with aiohttp.ClientSession() as http:
        status, body = await call(http, d, "POST", "/shutdown")
    assert status == 200 and body["ok"]
    await asyncio.wait_for(waiter, EVENT_CEILING_S)
    assert not (home / "state" / "daemon.json").exists()


async def test_watcher_refreshes_changed_repositories(home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    (repo / "node_modules" / "dep").mkdir(parents=True)
    (repo / ".venv" / "lib").mkdir(parents=True)
    d = Daemon(Settings.from_env(), watch=True)
    d.watcher.debounce_ms, d.watcher.step_ms = 300, 50  # type: ignore[union-attr]
    await d.start()
    try:
        async with aiohttp.ClientSession() as http:
            await call(http, d, "POST", "/refresh", {"path": str(repo), "wait": 30})
            await asyncio.sleep(0.3)
            assert d.watcher.roots == (repo.resolve(),)  # type: ignore[union-attr]
            watched = {p.relative_to(repo.resolve()).as_posix() for p in d.watcher.dirs}  # type: ignore[union-attr]
            assert watched == {".", "src", "pool", "docs"}  # .git/ is pruned
            (repo / "node_modules" / "x.js").write_text("function ignoredEverywhere() {}\n")
            (repo / "src" / "watched.py").write_text("def picked_up_by_the_watcher():\n    pass\n")
            deadline = time.monotonic() + 15
            hits: list[dict[str, Any]] = []
            while time.monotonic() < deadline and not hits:
                await asyncio.sleep(0.2)
                _, body = await call(
                    http, d, "POST", "/search", {"query": "picked_up_by_the_watcher", "path": str(repo)}
                )
                hits = [h for h in body["hits"] if h["path"] == "src/watched.py"]
            assert hits, "the watcher did not refresh the repository"
    finally:
        await d.close()


def refresh_jobs(d: Daemon) -> int:
    snapshot = d.jobs.snapshot()
    jobs = [*snapshot["recent"], *snapshot["queued"], *([snapshot["running"]] if snapshot["running"] else [])]
    return sum(1 for j in jobs if j["kind"] == "refresh")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the daemon vouches for roots with inotify")
async def test_refresh_auto_leaves_freshness_to_the_watcher(home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    d = Daemon(Settings.from_env(), watch=True)
    d.watcher.debounce_ms = d.watcher.step_ms = 60_000  # type: ignore[union-attr] # only a flush hands changes on
    await d.start()
    try:
        async with aiohttp.ClientSession() as http:
            _, body = await call(http, d, "POST", "/search", {"query": "cookie", "path": str(repo)})
            assert body["created"] and body["refreshed"] is True and body["watched"] is True
            before = refresh_jobs(d)
            auto = {"path": str(repo), "refresh": "auto"}
            _, body = await call(http, d, "POST", "/search", {**auto, "query": "cookie"})
            assert body["refreshed"] is None and body["watched"] is True and body["hits"]
            assert refresh_jobs(d) == before  # nothing changed: no refresh
            # written just before the request: the daemon takes the change in and refreshes first
            (repo / "src" / "fresh.py").write_text("def brand_new_helper_function():\n    return 42\n")
            _, body = await call(http, d, "POST", "/search", {**auto, "query": "brand_new_helper_function"})
            assert body["refreshed"] is True and body["watched"] is True
            assert body["hits"][0]["path"] == "src/fresh.py"
            (repo / "src" / "fresh.py").unlink()
            _, body = await call(http, d, "POST", "/search", {**auto, "query": "brand_new_helper_function"})
            assert body["refreshed"] is True
            assert not [h for h in body["hits"] if h["path"] == "src/fresh.py"]
    finally:
        await d.close()
    # a new daemon has not seen what changed while none ran: it refreshes before it vouches
    (repo / "src" / "offline.py").write_text("def written_while_no_daemon_ran():\n    pass\n")
    d = Daemon(Settings.from_env(), watch=True)
    await d.start()
    try:
        async with aiohttp.ClientSession() as http:
            _, body = await call(http, d, "POST", "/search", {**auto, "query": "written_while_no_daemon_ran"})
            assert body["refreshed"] is True and body["watched"] is True
            assert body["hits"][0]["path"] == "src/offline.py"
    finally:
        await d.close()


async def test_refresh_auto_refreshes_a_root_the_daemon_cannot_vouch_for(home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    d = Daemon(Settings.from_env(), watch=True)
    d.watcher.backend = "watchfiles"  # type: ignore[union-attr] # holds events back: vouches for nothing
    await d.start()
    try:
        async with aiohttp.ClientSession() as http:
            _, body = await call(http, d, "POST", "/search", {"query": "cookie", "path": str(repo)})
            assert body["watched"] is False
            before = refresh_jobs(d)
            _, body = await call(
                http, d, "POST", "/search", {"query": "cookie", "path": str(repo), "refresh": "auto"}
            )
            assert body["refreshed"] is True and body["watched"] is False
            assert refresh_jobs(d) == before + 1
    finally:
        await d.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the daemon vouches for roots with inotify")
async def test_a_changed_collection_spec_is_not_vouched_for_until_watched_by_it(
    home: Path, tmp_path: Path
) -> None:
    import yaml

    repo = make_repo(tmp_path / "proj")
    d = Daemon(Settings.from_env(), watch=True)
    await d.start()
    auto = {"query": "cookie", "path": str(repo), "refresh": "auto"}
    try:
        async with aiohttp.ClientSession() as http:
            _, body = await call(http, d, "POST", "/search", {"query": "cookie", "path": str(repo)})
            assert body["watched"] is True
            # index.yml edited behind the daemon's back (the CLI does this): the watch follows old rules
            config = home / "config" / "index.yml"
            raw = yaml.safe_load(config.read_text())
            raw["collections"]["repo-proj"]["ignore"] = ["docs/"]
            config.write_text(yaml.safe_dump(raw))
            _, body = await call(http, d, "POST", "/search", auto)
            assert body["refreshed"] is True and body["watched"] is False
            watcher = d.watcher
            assert watcher is not None
            deadline = time.monotonic() + 10  # the refresh re-syncs the watch with the new rules
            while time.monotonic() < deadline:
                spec = watcher.spec(repo.resolve())
                if spec is not None and spec.ignore == ("docs/",) and watcher.vouches(repo.resolve()):
                    break
                await asyncio.sleep(0.05)
            _, body = await call(http, d, "POST", "/search", auto)
            assert body["refreshed"] is True and body["watched"] is True  # refreshed after the new watch
            _, body = await call(http, d, "POST", "/search", auto)
            assert body["refreshed"] is None and body["watched"] is True
    finally:
        await d.close()


def test_budget_ms_reaches_the_search_options() -> None:
    from qmd_daemon.daemon.api import parse_search

    assert parse_search({"query": "x"}).options.budget_ms == 1500.0, "the default budget"
    assert parse_search({"query": "x", "budget_ms": 250}).options.budget_ms == 250.0
    assert parse_search({"query": "x", "budget_ms": 0}).options.budget_ms is None, "0: no budget"


@pytest.mark.parametrize(
    "body, says",
    [
        ({"query": "x", "deep": json.loads("[" * 50 + "]" * 50)}, None),  # sanity: 50 levels parse
        ({"query": "x", "path": "/tmp/a\x00b"}, "NUL"),
        ({"query": "x", "path": "~qmd_no_such_user_here/src"}, "no such user"),
        ({"query": "x", "path": "/" + "a" * 5000}, "cannot be used"),
        ({"query": "x", "path": "/" + "/".join(["abcdefgh"] * 600)}, "cannot be used"),
        ({"query": "x", "path": "/tmp/\ud800"}, "cannot be used"),
        # truthiness read "false" as true and an object as a refresh request
        ({"query": "x", "rerank": "false"}, "'rerank' must be true or false"),
        ({"query": "x", "refresh": {"a": 1}}, "'refresh' must be true or false"),
        ({"query": "x", "explain": 1}, "'explain' must be true or false"),
        ({"query": "x", "refresh": "auto"}, None),
    ],
)
async def test_bad_request_bodies_are_400_with_one_line(
    daemon: Daemon, http: aiohttp.ClientSession, body: dict[str, Any], says: str | None
) -> None:
    # these were HTTP 500 ("ValueError: embedded null byte", "RuntimeError: Could not determine
    # home directory", "OSError: File name too long")
    raw = json.dumps(body).encode()
    async with http.post(url(daemon, "/search"), data=raw, headers=auth(daemon)) as resp:
        answer = await resp.json()
    if says is None:
        assert resp.status == 200, answer
        return
    assert resp.status == 400, answer
    assert answer["error"]["code"] == "bad_request" and says in answer["error"]["message"]
    assert "\n" not in answer["error"]["message"]


async def test_deeply_nested_json_is_400(daemon: Daemon, http: aiohttp.ClientSession) -> None:
    raw = b'{"query": "x", "deep": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"  # RecursionError: was 500
    async with http.post(url(daemon, "/search"), data=raw, headers=auth(daemon)) as resp:
        answer = await resp.json()
    assert resp.status == 400 and answer["error"] == {
        "code": "bad_request", "message": "the body is nested too deeply"
    }


async def test_a_search_past_its_deadline_is_a_503_and_health_still_answers(home: Path) -> None:
    d = Daemon(Settings.from_env(), watch=False, search_deadline_s=0.5)
    await d.start()
    try:
        async with reader_busy(d) as busy, aiohttp.ClientSession() as http:
            search = asyncio.ensure_future(call(http, d, "POST", "/search", {"query": "anything"}))
            status, _ = await call(http, d, "GET", "/health")
            assert status == 200 and not busy.done()  # answered while the reader is busy
            status, body = await search
            assert not busy.done(), "the search waited for the reader instead of its deadline"
        assert status == 503 and body["error"]["code"] == "timeout", body
        assert "0.5 s" in body["error"]["message"]
    finally:
        await d.close()


async def start_up_tasks_done(d: Daemon) -> None:
    """Wait for what start() left running in the background (the index check among them): a
    close() meanwhile would cancel them."""
    async with asyncio.timeout(EVENT_CEILING_S):
        while d._background:
            await asyncio.wait(set(d._background))


async def test_a_damaged_index_is_found_at_start_and_named_with_its_fix(home: Path, tmp_path: Path) -> None:
    from tests.store.test_index_faults import _indexed, _scribble

    index = _indexed(tmp_path)
    _scribble(index, 0.5)  # the schema still reads: only a full read finds it
    d = Daemon(Settings.from_env(), watch=False)
    await d.start()
    try:
        async with aiohttp.ClientSession() as http:
            await start_up_tasks_done(d)
            status, body = await call(http, d, "POST", "/search", {"query": "handler", "collection": "repo"})
            assert status == 503 and body["error"]["code"] == "index_damaged", body
            assert "is damaged" in body["error"]["message"]
            assert "move it away and run `qmd-daemon update`" in body["error"]["message"]
            assert (await call(http, d, "GET", "/health"))[0] == 200
    finally:
        await d.close()


async def test_the_start_up_index_check_runs_once_a_day(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # quick_check reads the whole index (12-14 s at 503k chunks, beside the first searches): a
    # daemon starts at every session, so a sound index is checked again only a day later
    from qmd_daemon.daemon import server
    from tests.store.test_index_faults import _indexed

    _indexed(tmp_path)
    checks: list[Path] = []
    real = server.quick_check

    def counted(path: Path) -> None:
        checks.append(path)
        real(path)

    monkeypatch.setattr(server, "quick_check", counted)

    async def start_and_close() -> Daemon:
        d = Daemon(Settings.from_env(), watch=False)
        await d.start()
        await start_up_tasks_done(d)  # the check ran and recorded its finding, or was skipped
        await d.close()
        return d

    await start_and_close()
    await start_and_close()
    assert len(checks) == 1
    record = Settings.from_env().state_dir / server.INDEX_CHECK_RECORD
    seen = json.loads(record.read_text(encoding="utf-8"))
    a_day_ago = seen["checked_at"] - server.INDEX_CHECK_INTERVAL_S - 1
    record.write_text(json.dumps({**seen, "checked_at": a_day_ago}))
    await start_and_close()
    assert len(checks) == 2


async def test_the_first_search_in_a_clone_leaves_out_the_repository_it_was_cloned_from(
    daemon: Daemon, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    """A default repository and a fresh `git clone` of it: the clone's first search registers and
    indexes it, and the scope was taken before that update recorded the clone's root commits, so
    every hit came twice (half from the checkout the agent is not in); the second search was right."""
    lib = committed_repository(tmp_path / "lib", {"src/client.py": SAMPLE_PY})
    engine = Engine(Settings.from_env())
    engine.update([engine.add_collection(lib, include_by_default=True).name])
    clone = tmp_path / "work" / "lib"
    git(tmp_path, "clone", "-q", str(lib), str(clone))
    for attempt in ("first", "second"):
        status, body = await call(
            http, daemon, "POST", "/search", {"query": "parse cookie header", "path": str(clone)}
        )
        assert status == 200, body
        assert body["collections"] == [body["collection"]], attempt
        assert {h["collection"] for h in body["hits"]} == {body["collection"]}, attempt


def test_the_fallback_search_in_a_clone_leaves_out_the_repository_it_was_cloned_from(
    home: Path, tmp_path: Path
) -> None:
    """The same for the in-process search a client falls back to: it took the scope before its
    update."""
    lib = committed_repository(tmp_path / "lib", {"src/client.py": SAMPLE_PY})
    engine = Engine(Settings.from_env())
    engine.update([engine.add_collection(lib, include_by_default=True).name])
    clone = tmp_path / "work" / "lib"
    git(tmp_path, "clone", "-q", str(lib), str(clone))
    request = json.dumps({"query": "parse cookie header", "path": str(clone), "auto": True})
    proc = subprocess.run(
        [sys.executable, "-m", "qmd_daemon.daemon", "search", "--request", request],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["created"] and body["collections"] == [body["collection"]]
    assert {h["collection"] for h in body["hits"]} == {body["collection"]}
