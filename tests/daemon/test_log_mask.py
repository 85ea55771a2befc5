"""daemon.log never holds the database password: a traceback logged with a PostgreSQL error in its
chain (the error is raised as one masked line, but `from` the driver's own, which the traceback
prints whole). A real server (tests/postgres_server.py) raises a message quoting the password, as
dblink or postgres_fdw do; its Unix socket trusts the local user, so the password in the URL is
sent nowhere. The daemon's own set-up (mask_configured, what `serve` runs first)."""

from __future__ import annotations

import io
import logging
import traceback
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.settings import Settings
from qmd_daemon.store.backends import mask_configured
from qmd_daemon.store.postgres.connection import PostgresDatabase

SECRET = "hunter2-Xq9"


@pytest.fixture
def daemon_log(home: Path) -> Iterator[io.StringIO]:
    """A handler on the root logger as `serve` makes one (its stream: daemon.log)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    yield stream
    root.removeHandler(handler)


def _failing_chain(url: str) -> BaseException:
    """A job that failed some other way while it handled a database error (the error a real
    server raised, through the store's translation): what `log.exception` then prints."""
    db = PostgresDatabase(url)
    try:
        quoted = url.replace("'", "''")
        db.execute(f"DO $$ BEGIN RAISE EXCEPTION 'mirror % refused', '{quoted}'; END $$")
    except IndexDatabaseError:
        try:
            raise RuntimeError("the job broke while it gave up")  # noqa: B904 - the chain is the point
        except RuntimeError as exc:
            return exc
    finally:
        db.close()
    raise AssertionError("the server raised nothing")


@pytest.mark.parametrize("form", ["keyword", "url"])
def test_a_logged_traceback_of_a_database_error_keeps_the_password_out(
    home: Path, postgres_url: str, daemon_log: io.StringIO, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    parts = psycopg.conninfo.conninfo_to_dict(postgres_url)
    url = (
        f"host={parts['host']} user={parts['user']} password={SECRET} dbname={parts['dbname']}"
        if form == "keyword"
        else f"postgresql://{parts['user']}:{SECRET}@/{parts['dbname']}?host={parts['host']}"
    )
    monkeypatch.setenv("QMD_DATABASE_URL", url)
    (home / "config").mkdir(parents=True)
    (home / "config" / "index.yml").write_text("backend: postgres\n")
    failed = _failing_chain(url)
    whole = "".join(traceback.format_exception(failed))
    assert SECRET in whole  # the driver's error in the chain holds it: what the filter is for
    assert SECRET not in str(failed.__context__)  # the store's own line was masked already
    mask_configured(Settings.from_env())
    log = logging.getLogger("qmd_daemon.jobs")
    try:
        raise failed
    except RuntimeError:
        log.exception("job %s failed (%s)", 7, url)
    log.warning("retrying %s", url, stack_info=True)
    written = daemon_log.getvalue()
    assert SECRET not in written
    assert "Traceback" in written and "psycopg.errors.RaiseException" in written  # the chain stays
    assert "RuntimeError: the job broke while it gave up" in written and "***" in written
    assert "job 7 failed" in written and "retrying" in written


def test_no_server_configured_no_filter(home: Path, daemon_log: io.StringIO) -> None:
    """A local index has no password: nothing is added to the handlers."""
    mask_configured(Settings.from_env())
    logging.getLogger("qmd_daemon.jobs").warning("password=kept-as-it-is")
    assert "password=kept-as-it-is" in daemon_log.getvalue()
