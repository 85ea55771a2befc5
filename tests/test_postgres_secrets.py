"""A database password never reaches the terminal (docs/postgres.md "What the daemon sends"): in
`status`, in the one line of a server that is down, and in an error the server raises while a
command runs, for both ways of writing the server: a libpq keyword string (`host=... password=...`)
and a URL (`postgresql://user:password@host/db`). A real server (tests/postgres_server.py): its
Unix socket trusts the local user, so a password in the URL is sent nowhere and changes nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psycopg
import pytest

from tests.conftest import SAMPLE_PY, run_cli, write_tree

SECRET = "s3cretPW"


def _with_password(url: str, form: str) -> str:
    """The test database's URL with SECRET as its password, in FORM (keyword or url)."""
    parts = psycopg.conninfo.conninfo_to_dict(url)
    if form == "keyword":
        return f"host={parts['host']} user={parts['user']} password={SECRET} dbname={parts['dbname']}"
    return f"postgresql://{parts['user']}:{SECRET}@/{parts['dbname']}?host={parts['host']}"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "index.yml").write_text("backend: postgres\n", encoding="utf-8")
    return home


@pytest.mark.parametrize("form", ["keyword", "url"])
def test_status_names_the_server_without_its_password(tmp_path: Path, postgres_url: str, form: str) -> None:
    url = _with_password(postgres_url, form)
    home = _home(tmp_path)
    shown = run_cli("status", env_home=home, check=True, QMD_DATABASE_URL=url)
    as_json = run_cli("status", "--json", env_home=home, check=True, QMD_DATABASE_URL=url)
    database = psycopg.conninfo.conninfo_to_dict(postgres_url)["dbname"]
    assert "index:  postgresql postgres@" in shown.stdout and database in shown.stdout
    assert json.loads(as_json.stdout)["index"].endswith(f"/{database}")
    for output in (shown.stdout, shown.stderr, as_json.stdout, as_json.stderr):
        assert SECRET not in output


@pytest.mark.parametrize("form", ["keyword", "url"])
def test_a_server_that_is_down_is_one_line_without_its_password(tmp_path: Path, form: str) -> None:
    nothing = tmp_path / "no-server"  # a socket folder no server listens in
    nothing.mkdir()
    url = _with_password(f"postgresql://qmd@/qmd?host={nothing}", form)
    for command in (("status",), ("status", "--json"), ("collection", "list"), ("embed",)):
        failed = run_cli(*command, env_home=_home(tmp_path / "-".join(command)), QMD_DATABASE_URL=url)
        assert failed.returncode == 1 and failed.stderr.count("\n") == 1, failed.stderr
        assert "cannot reach the index database" in failed.stderr
        assert SECRET not in failed.stderr + failed.stdout


@pytest.mark.parametrize("form", ["keyword", "url"])
def test_an_error_the_server_raises_mid_command_is_masked(
    tmp_path: Path, postgres_url: str, form: str
) -> None:
    """A server's message can quote a connection string (dblink and postgres_fdw do, with the
    password): the statement error of an update was printed as the driver wrote it."""
    url = _with_password(postgres_url, form)
    home = _home(tmp_path)
    run_cli("status", env_home=home, check=True, QMD_DATABASE_URL=url)  # the schema exists now
    echoed = url.replace("'", "''")
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(
            f"""CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                RAISE EXCEPTION 'could not reach the mirror with "%": % refused', '{echoed}', '{SECRET}';
            END $$"""
        )
        admin.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON collections FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
    repo = tmp_path / "app"
    write_tree(repo, {"client.py": SAMPLE_PY})
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    failed = run_cli("collection", "add", str(repo), env_home=home, QMD_DATABASE_URL=url)
    assert failed.returncode == 1 and failed.stderr.count("\n") == 1, failed.stderr
    assert "could not reach the mirror" in failed.stderr and "***" in failed.stderr
    assert SECRET not in failed.stderr + failed.stdout
