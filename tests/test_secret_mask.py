"""A PostgreSQL password never reaches what a user or an agent reads, from any entry point
(qmd_daemon/secret_mask.py): what the in-process front ends log, the daemon's error bodies and
jobs, and a password that changed while the process ran. A real server (tests/postgres_server.py):
its Unix socket trusts the local user, so the passwords in the URLs are sent nowhere."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from qmd_daemon import secret_mask
from qmd_daemon.daemon.jobs import Job
from qmd_daemon.daemon.server import Daemon
from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings

SECRET = "Pw-7xQz"
NEW_SECRET = "Rotated-k4M"


def _url(postgres_url: str, form: str, secret: str = SECRET) -> str:
    parts = psycopg.conninfo.conninfo_to_dict(postgres_url)
    if form == "keyword":
        return f"host={parts['host']} user={parts['user']} password={secret} dbname={parts['dbname']}"
    return f"postgresql://{parts['user']}:{secret}@/{parts['dbname']}?host={parts['host']}"


# What each in-process entry point runs, then a warning quoting the URL as psycopg's own logger
# writes one ("error ignored in rollback on <conn>: <server message>"): no handler is configured
# there, so Python's last-resort handler prints it on stderr; the MCP SDK adds its own (rich).
_ENTRY_POINTS = {
    "cli status": "from qmd_daemon.cli import cli\ncli.main(['status'], standalone_mode=False)",
    "in-process search": (
        "from qmd_daemon.daemon.__main__ import main\n"
        "main(['search', '--request', json.dumps({'query': 'anything'})])"
    ),
    "mcp": (
        "from qmd_daemon.cli import cli\nfrom qmd_daemon.engine import Engine\n"
        "from qmd_daemon.mcp_server import build_server\n"
        "cli.main(['collection', 'list'], standalone_mode=False)\nbuild_server(Engine())"
    ),
}


@pytest.mark.parametrize("entry", sorted(_ENTRY_POINTS))
@pytest.mark.parametrize("form", ["keyword", "url"])
def test_every_in_process_entry_point_masks_what_it_logs(
    tmp_path: Path, postgres_url: str, entry: str, form: str
) -> None:
    url = _url(postgres_url, form)
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "index.yml").write_text("backend: postgres\n")
    script = (
        "import json, logging, sys\n"
        f"{_ENTRY_POINTS[entry]}\n"
        "logging.getLogger('psycopg').warning('error ignored in rollback on %s: %s', 'conn', sys.argv[1])\n"
        "try:\n    raise RuntimeError(sys.argv[1])\nexcept RuntimeError:\n"
        "    logging.getLogger('qmd_daemon').exception('failed')\n"
    )
    env = {**__import__("os").environ, "QMD_DAEMON_HOME": str(home), "QMD_DATABASE_URL": url}
    done = subprocess.run(
        [sys.executable, "-c", script, f"mirror at {url} refused, password {SECRET}"],
        capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "error ignored in rollback" in done.stderr and "RuntimeError" in done.stderr
    assert SECRET not in done.stderr + done.stdout, done.stderr


async def test_the_daemons_error_bodies_are_masked(
    home: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 500 (`Type: message` of an error nothing translated) and a QmdError's line: no driver
    message is known to reach them unmasked today, so a handler raises one quoting the URL."""
    url = _url(postgres_url, "url")
    monkeypatch.setenv("QMD_DATABASE_URL", url)
    (home / "config").mkdir(parents=True)
    (home / "config" / "index.yml").write_text("backend: postgres\n")
    daemon = Daemon(Settings.from_env(), watch=False, write_state_file=False)
    from qmd_daemon.store.backends import mask_configured

    assert mask_configured(daemon.settings)  # what `serve` does at start

    async def fails(request: web.Request) -> web.Response:
        raise RuntimeError(f"could not reach the mirror {url}; password {SECRET}")

    app = web.Application(middlewares=[daemon._middleware])  # the daemon's real error mapping
    app.router.add_post("/fails", fails)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        daemon.port = client.port
        resp = await client.post("/fails", headers={"Authorization": f"Bearer {daemon.token}"})
        body = await resp.text()
    daemon.reader.close()
    assert resp.status == 500 and "RuntimeError: could not reach the mirror" in body
    assert SECRET not in body and "***" in body


def test_a_failed_job_shows_its_error_masked(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/health's `jobs`, /status, /jobs/ID and a search's `refresh_error` all show Job.as_dict."""
    url = f"postgresql://qmd:{SECRET}@db.internal/qmd"
    monkeypatch.setenv("QMD_DATABASE_URL", url)
    (home / "config").mkdir(parents=True)
    (home / "config" / "index.yml").write_text("backend: postgres\n")
    from qmd_daemon.store.backends import mask_configured

    assert mask_configured(Settings.from_env())
    job = Job("refresh", (f"repo-{SECRET}",))
    job.error = {"code": "job_failed", "message": f"RuntimeError: mirror {url} said {SECRET}"}
    job.result = {"reports": [{"collection": "app", "error": f"password={SECRET}"}]}
    shown = job.as_dict()
    assert SECRET not in json.dumps([shown["error"], shown["result"]])
    assert "RuntimeError: mirror" in shown["error"]["message"]
    assert job.error["message"].endswith(SECRET)  # the job itself keeps what happened
    # the names are the user's own, never a driver's message: a collection named like a (short,
    # common) password is not turned into `***`
    assert shown["collections"] == [f"repo-{SECRET}"]


def test_a_password_changed_while_running_is_masked_with_the_old_one(
    home: Path, postgres_url: str
) -> None:
    """index.yml edited under a running daemon: the engine opens the new server, and both the old
    and the new password are masked, bare (a message quoting only the secret) as well as in a
    connection string."""
    import logging

    config = home / "config" / "index.yml"
    config.parent.mkdir(parents=True)
    config.write_text(f"database_url: {_url(postgres_url, 'url')}\n")
    engine = Engine(Settings.from_env())
    try:
        engine.status()
        config.write_text(f"database_url: {_url(postgres_url, 'keyword', NEW_SECRET)}\n")
        engine.status()  # re-reads index.yml: a new URL, a new connection
    finally:
        engine.close()
    record = logging.getLogger("qmd_daemon.jobs").makeRecord(
        "qmd_daemon.jobs", logging.WARNING, __file__, 1, "old %s new %s, %s", (SECRET, NEW_SECRET,
        "postgresql://someone:other-Secret@elsewhere/db password=also-Hidden"), None,
    )
    shown = record.getMessage()
    for secret in (SECRET, NEW_SECRET, "other-Secret", "also-Hidden"):
        assert secret not in shown, shown
    assert shown.startswith("old *** new ***")


def test_no_server_no_mask(home: Path) -> None:
    """A local index has no password: a log line quoting code with `password=` stays as it is."""
    import logging

    from qmd_daemon.store.backends import mask_configured

    assert not mask_configured(Settings.from_env())
    record = logging.getLogger("x").makeRecord("x", logging.WARNING, __file__, 1, "password=kept", (), None)
    assert record.getMessage() == "password=kept"
    assert secret_mask.mask("postgresql://u:kept@h/db") == "postgresql://u:kept@h/db"


def test_an_argument_that_cannot_be_printed_is_logging_s_problem_not_the_callers(tmp_path: Path) -> None:
    """A log call's argument whose __str__ raises (an object half built, a lazy value that fails):
    logging reports it on stderr from the handler and the caller goes on. The mask formats every
    message as the record is made, in the caller's frame, and let anything but TypeError and
    ValueError out of the logging call itself; and logging's report of a record it cannot format
    quotes its arguments, unmasked. A process of its own: pytest's capture handler
    re-raises what a handler reports."""
    script = (
        "import logging, sys\n"
        "from qmd_daemon import secret_mask\n"
        "class Unprintable:\n"
        "    def __str__(self):\n"
        "        raise RuntimeError('not ready')\n"
        "secret_mask.remember(f'postgresql://qmd:{sys.argv[1]}@db.internal/qmd')\n"
        "logging.basicConfig()\n"
        "logging.getLogger('qmd_daemon').warning('mirror %s', Unprintable())\n"
        "logging.getLogger('qmd_daemon').warning('then %s', sys.argv[1])\n"
        "logging.getLogger('qmd_daemon').warning('no server at', f'postgresql://qmd:{sys.argv[1]}@h/db')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, SECRET], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # was 1: the RuntimeError came out of `warning`
    assert "--- Logging error ---" in done.stderr and "RuntimeError: not ready" in done.stderr
    assert "then ***" in done.stderr and "Message: 'no server at'" in done.stderr
    assert SECRET not in done.stderr, done.stderr  # logging's report quotes the arguments
