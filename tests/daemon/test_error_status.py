"""The daemon's HTTP status and error code come from the error's type (errors.py), never from its
message: each type through the daemon's own middleware, then the ones a real request can reach
through a real daemon and the in-process fallback (a real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from qmd_daemon.daemon.server import Daemon
from qmd_daemon.errors import (
    ConfigError,
    IndexDatabaseError,
    QmdError,
    RequestError,
    UnknownCollectionError,
    UsageError,
)
from qmd_daemon.locks import LockBusy
from qmd_daemon.models import ModelError
from qmd_daemon.settings import Settings

# The contract clients rely on, written out: a change to a type's status shows up here.
EXPECTED = [
    (QmdError("engine broke"), 500, "engine_error"),
    (ConfigError("cannot parse index.yml"), 409, "config_error"),
    (IndexDatabaseError("index is damaged"), 503, "index_error"),
    (UsageError("path does not exist"), 400, "bad_request"),
    (UnknownCollectionError("no collection named 'x'"), 404, "not_found"),
    (LockBusy("another embedding run holds the lock"), 409, "busy"),
    (ModelError("model file missing"), 500, "model_error"),
    (RequestError(404, "not_found", "no job 7"), 404, "not_found"),
]


@pytest.mark.parametrize(("error", "status", "code"), EXPECTED, ids=lambda v: type(v).__name__)
async def test_each_error_type_answers_its_status(
    home: Path, error: QmdError, status: int, code: str
) -> None:
    daemon = Daemon(Settings.from_env(), watch=False, write_state_file=False)

    async def fails(request: web.Request) -> web.Response:
        raise error

    app = web.Application(middlewares=[daemon._middleware])  # the daemon's real error mapping
    app.router.add_post("/fails", fails)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        daemon.port = client.port  # the Host check wants the daemon's own port
        resp = await client.post("/fails", headers={"Authorization": f"Bearer {daemon.token}"})
        assert resp.status == status
        assert await resp.json() == {"error": {"code": code, "message": str(error)}}
    daemon.reader.close()
    daemon.writer.close()


async def _search(d: Daemon, body: dict[str, object]) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {d.token}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"http://127.0.0.1:{d.port}/search", json=body, headers=headers) as resp,
    ):
        return resp.status, await resp.json()


async def test_broken_index_yml_is_a_config_error(daemon: Daemon, home: Path) -> None:
    config = home / "config" / "index.yml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("collections: [unclosed\n")
    status, body = await _search(daemon, {"query": "anything"})
    assert (status, body["error"]["code"]) == (409, "config_error")


async def test_refused_folder_is_a_usage_error(daemon: Daemon, tmp_path: Path) -> None:
    plain = tmp_path / "not-a-repo"
    plain.mkdir()
    status, body = await _search(daemon, {"query": "anything", "path": str(plain)})
    assert (status, body["error"]["code"]) == (400, "bad_request")


def test_fallback_answers_the_same_code_and_the_types_exit_code(home: Path, tmp_path: Path) -> None:
    plain = tmp_path / "not-a-repo"
    plain.mkdir()
    request = json.dumps({"query": "anything", "path": str(plain)})
    proc = subprocess.run(
        [sys.executable, "-m", "qmd_daemon.daemon", "search", "--request", request],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == UsageError.exit_code
    assert json.loads(proc.stdout)["error"]["code"] == "bad_request"


async def test_a_set_aside_collections_folder_is_a_config_error(
    daemon: Daemon, home: Path, tmp_path: Path
) -> None:
    """index.yml sets the collection aside (a mask this version refuses): the user's configuration,
    409 config_error with the fix, not a 500 that reads as the daemon's fault."""
    repo = tmp_path / "old"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    config = home / "config" / "index.yml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"collections:\n  old:\n    path: {repo}\n    pattern: '**/*.py['\n")
    status, body = await _search(daemon, {"query": "anything", "path": str(repo / "src")})
    assert (status, body["error"]["code"]) == (409, "config_error")
    assert "collection add" in body["error"]["message"]
