"""`collection remove` on a team's shared PostgreSQL index (docs/postgres.md "What each home sees"):
it takes the collection out of this home's index.yml, and deletes the rows (hours of embedding for
the others) only when no other home lists it, or with `--purge`; a home that vanished does not
pin them; a remove killed halfway is finished by the next update on both paths; `status` totals
count this home's collections. Two or three homes on one real server (tests/postgres_server.py),
each a real CLI process where the user would type."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import yaml

from qmd_daemon.config import IndexConfig
from tests.conftest import REPO_ROOT, SAMPLE_PY, run_cli, write_tree

TOOL_PY = "def invoice_total(lines):\n    return sum(lines)\n"


def _home(tmp_path: Path, name: str) -> Path:
    home = tmp_path / name
    (home / "config").mkdir(parents=True)
    (home / "config" / "index.yml").write_text("backend: postgres\n", encoding="utf-8")
    return home


def _repo(root: Path, files: dict[str, str | bytes]) -> Path:
    write_tree(root, files)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _qmd(home: Path, url: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env_home=home, check=check, QMD_DATABASE_URL=url)


def _on_server(url: str, name: str) -> int:
    """The chunks the server holds for collection NAME (-1: no such collection)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM chunks c WHERE c.collection_id = col.id) FROM collections col"
            " WHERE name = %s",
            (name,),
        ).fetchone()
    return int(row[0]) if row else -1


def _two_homes_list_app(tmp_path: Path, url: str) -> tuple[Path, Path]:
    """Homes A and B, each with a checkout of one repository: one collection `repo-app`."""
    a, b = _home(tmp_path, "home-a"), _home(tmp_path, "home-b")
    for home, machine in ((a, "machine-a"), (b, "machine-b")):
        repo = _repo(tmp_path / machine / "app", {"client.py": SAMPLE_PY})
        _qmd(home, url, "collection", "add", str(repo))
    return a, b


def test_remove_keeps_the_rows_another_home_lists_and_the_last_one_deletes_them(
    tmp_path: Path, postgres_url: str
) -> None:
    """B tidying its list deleted A's collection (A re-indexed and re-embedded it)."""
    a, b = _two_homes_list_app(tmp_path, postgres_url)
    chunks = _on_server(postgres_url, "repo-app")
    assert chunks > 0
    kept = _qmd(b, postgres_url, "collection", "remove", "repo-app").stdout
    assert "removed repo-app from this home's index.yml; 1 other home still lists it" in kept
    assert "home-a" in kept and kept.strip().endswith("rows kept")
    assert _on_server(postgres_url, "repo-app") == chunks
    assert "repo-app" not in IndexConfig.load(b / "config" / "index.yml").collections()
    shown = _qmd(b, postgres_url, "status").stdout
    assert "repo-app (not in this index.yml: another home's)" in shown
    found = json.loads(_qmd(a, postgres_url, "search", "ClientSession", "--json").stdout)
    assert [hit["path"] for hit in found][:1] == ["client.py"]

    done = json.loads(_qmd(a, postgres_url, "collection", "remove", "repo-app", "--json").stdout)
    assert (done["deleted"], done["others"], done["shared"]) == (True, [], True)
    assert _on_server(postgres_url, "repo-app") == -1


def test_a_home_that_vanished_does_not_pin_the_rows_and_purge_deletes_for_everyone(
    tmp_path: Path, postgres_url: str
) -> None:
    a, b = _two_homes_list_app(tmp_path, postgres_url)
    c = _home(tmp_path, "home-c")
    tool = _repo(tmp_path / "machine-c" / "tool", {"tool.py": TOOL_PY})
    _qmd(c, postgres_url, "collection", "add", str(tool))
    a_tool = _repo(tmp_path / "machine-a" / "tool", {"tool.py": TOOL_PY})
    _qmd(a, postgres_url, "collection", "add", str(a_tool))
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # A's machine retired 31 days ago
        conn.execute("UPDATE collection_homes SET seen_at = seen_at - 31 * 86400 WHERE label LIKE %s",
                     (f"%{a / 'state'}",))

    gone = _qmd(b, postgres_url, "collection", "remove", "repo-app").stdout
    assert "removed repo-app: deleted its rows, no other home lists it" in gone
    assert "not renewed for 30 days not counted" in gone and "home-a" in gone
    assert _on_server(postgres_url, "repo-app") == -1

    # a name only other homes list: refused without --purge, one line that says how
    refused = _qmd(b, postgres_url, "collection", "remove", "repo-tool", check=False)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "--purge" in refused.stderr and _on_server(postgres_url, "repo-tool") > 0
    purged = _qmd(b, postgres_url, "collection", "remove", "repo-tool", "--purge").stdout
    assert "purged repo-tool: deleted its rows for every home, 1 other home still listing it" in purged
    assert "home-c" in purged and _on_server(postgres_url, "repo-tool") == -1
    # C still lists it: its next update indexes it again, from its own folder
    _qmd(c, postgres_url, "update")
    assert _on_server(postgres_url, "repo-tool") > 0


_DIES_IN = """
import os, sys
from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.homes import PostgresHomes

if sys.argv[2] == "release":
    PostgresHomes.release = lambda self, name, collection_id, purge: os._exit(137)
else:
    PostgresChunkStore.remove_collection = lambda self, name: os._exit(137)
Engine(Settings.from_env()).remove_collection(sys.argv[1])
"""


@pytest.mark.parametrize("where", ["release", "delete"])
def test_a_remove_killed_halfway_is_finished_by_the_next_update(
    tmp_path: Path, postgres_url: str, where: str
) -> None:
    """Both paths: rows kept for another home (killed before the listing went), rows deleted by
    the last home (killed inside the delete's transaction: nothing of it committed)."""
    a, b = _two_homes_list_app(tmp_path, postgres_url)
    chunks = _on_server(postgres_url, "repo-app")
    remover, other = (b, a) if where == "release" else (a, None)
    if other is None:  # the delete path: B leaves first, so A is the last home listing it
        _qmd(b, postgres_url, "collection", "remove", "repo-app")
    env = dict(os.environ, QMD_DAEMON_HOME=str(remover), QMD_DATABASE_URL=postgres_url)
    died = subprocess.run([sys.executable, "-c", _DIES_IN, "repo-app", where], env=env, cwd=REPO_ROOT,
                          timeout=60)
    assert died.returncode == 137
    assert "repo-app" in IndexConfig.load(remover / "config" / "index.yml").removing()
    assert _on_server(postgres_url, "repo-app") == chunks  # cut short: nothing deleted yet
    _qmd(remover, postgres_url, "update")
    assert IndexConfig.load(remover / "config" / "index.yml").removing() == {}
    assert _on_server(postgres_url, "repo-app") == (chunks if where == "release" else -1)


def test_status_totals_are_this_homes_collections(tmp_path: Path, postgres_url: str) -> None:
    """The totals counted every collection on the server beside a per-collection list of this
    home's: B, with 1 chunk of its own, read `deep vectors: 0/N` for the whole team's N."""
    a, b = _home(tmp_path, "home-a"), _home(tmp_path, "home-b")
    app_files = {"client.py": SAMPLE_PY, "billing.py": TOOL_PY, "README.md": "# App\n\nHTTP sessions.\n"}
    _qmd(a, postgres_url, "collection", "add", str(_repo(tmp_path / "a" / "app", app_files)))
    _qmd(b, postgres_url, "collection", "add", str(_repo(tmp_path / "b" / "tool", {"tool.py": TOOL_PY})))
    app, tool = _on_server(postgres_url, "repo-app"), _on_server(postgres_url, "repo-tool")
    assert app > tool > 0
    info = json.loads(_qmd(b, postgres_url, "status", "--json").stdout)
    assert info["vectors"]["chunks"] == tool
    assert info["server"] == {"collections": 2, "chunks": app + tool, "others": 1}
    if info["static_vectors"]["available"]:
        assert info["static_vectors"]["chunks"] == tool
    shown = _qmd(b, postgres_url, "status").stdout
    assert f"server: 2 collections, {app + tool} chunks in all (1 collection not in this index.yml)" in shown


def test_a_collection_set_aside_for_its_mask_stays_listed_so_another_homes_remove_keeps_it(
    tmp_path: Path, postgres_url: str
) -> None:
    """After an upgrade refuses A's old mask, A's collection is set aside (config.refused), not
    forgotten: A's listing on the server must stay, else B's remove deleted A's rows."""
    a, b = _two_homes_list_app(tmp_path, postgres_url)
    chunks = _on_server(postgres_url, "repo-app")
    config_file = a / "config" / "index.yml"
    raw = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    raw["collections"]["repo-app"]["pattern"] = "**/*.py["  # as an older version saved it
    config_file.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert "repo-app" in IndexConfig.load(config_file).refused()
    _qmd(a, postgres_url, "status")  # A opens the index with the collection set aside
    kept = _qmd(b, postgres_url, "collection", "remove", "repo-app").stdout
    assert "1 other home still lists it" in kept and _on_server(postgres_url, "repo-app") == chunks


def test_a_search_only_role_lists_nothing_and_searches(tmp_path: Path, postgres_url: str) -> None:
    """docs/postgres.md: "a read-only role lists nothing and searches all the same". Its home
    renews its listings on opening the index; the server refuses the write, and the search must
    not fail for it."""
    _two_homes_list_app(tmp_path, postgres_url)
    role = f"reader_{os.getpid()}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        database = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'GRANT CONNECT ON DATABASE "{database}" TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{role}"')
    reader_url = psycopg.conninfo.make_conninfo(postgres_url, user=role)
    reader = tmp_path / "home-reader"
    (reader / "config").mkdir(parents=True)
    checkout = _repo(tmp_path / "machine-r" / "app", {"client.py": SAMPLE_PY})
    (reader / "config" / "index.yml").write_text(
        yaml.safe_dump({"backend": "postgres", "collections": {"repo-app": {"path": str(checkout)}}}),
        encoding="utf-8",
    )
    found = _qmd(reader, reader_url, "search", "ClientSession", "-c", "repo-app", "--json", check=False)
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)][:1] == ["client.py"]
    with psycopg.connect(postgres_url) as conn:
        labels = [row[0] for row in conn.execute("SELECT label FROM collection_homes").fetchall()]
    assert len(labels) == 2 and not any(str(reader) in label for label in labels)
    assert _on_server(postgres_url, "repo-app") > 0


def test_two_machines_with_one_label_keep_each_others_listings(tmp_path: Path, postgres_url: str) -> None:
    """Two machines made from one image (a container with a fixed hostname, a cloned VM: the same
    user, host name and state folder) have the same label and their own ids. Renewing its
    listings dropped every other id's of that label (meant for this home's own state folder,
    wiped), so each machine unlisted the other and a remove on one deleted the other's rows.
    Machine B is the real PostgresHomes on its own connection with A's label and another id (a
    second machine cannot run here)."""
    from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
    from qmd_daemon.store.postgres.connection import PostgresDatabase
    from qmd_daemon.store.postgres.homes import PostgresHomes, home_identity

    a = _home(tmp_path, "home-a")
    app = _repo(tmp_path / "machine-a" / "app", {"client.py": SAMPLE_PY})
    _qmd(a, postgres_url, "collection", "add", str(app))
    chunks = _on_server(postgres_url, "repo-app")
    _a_id, label = home_identity(a / "state")
    db = PostgresDatabase(postgres_url)
    try:
        store = PostgresChunkStore(db)
        machine_b = PostgresHomes(store, "machine-b-id", label)
        machine_b.sync(["repo-app"])
        assert [home.label for home in machine_b.listings()["repo-app"]] == [label, label]
        collection_id = store.collection_id("repo-app")
        assert collection_id is not None
        kept = machine_b.release("repo-app", collection_id, purge=False)
    finally:
        db.close()
    assert (kept.deleted, [home.label for home in kept.others]) == (False, [label])
    assert _on_server(postgres_url, "repo-app") == chunks


def test_a_renewal_racing_another_homes_delete_of_the_collection_is_no_error(
    tmp_path: Path, postgres_url: str
) -> None:
    """Home B renews its listings while home A's remove deletes the collection: B's insert waits
    on the deleted row and then fails its foreign key, and B's command (any command: a renewal
    runs when the index opens) failed with it. The collection is gone: nothing to list."""
    import threading

    from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
    from qmd_daemon.store.postgres.connection import PostgresDatabase
    from qmd_daemon.store.postgres.homes import PostgresHomes

    a = _home(tmp_path, "home-a")
    _qmd(a, postgres_url, "collection", "add", str(_repo(tmp_path / "app", {"client.py": SAMPLE_PY})))
    db = PostgresDatabase(postgres_url)
    errors: list[BaseException] = []
    try:
        home_b = PostgresHomes(PostgresChunkStore(db), "home-b-id", "b@host:/state")
        with psycopg.connect(postgres_url) as deleter:
            deleter.execute("DELETE FROM collections WHERE name = 'repo-app'")  # not committed yet

            def renew() -> None:
                try:
                    home_b.sync(["repo-app"])
                except BaseException as exc:  # noqa: BLE001 - reported to the test's thread
                    errors.append(exc)

            renewal = threading.Thread(target=renew)
            renewal.start()
            renewal.join(timeout=1.0)
            assert renewal.is_alive(), "the renewal waits on the row being deleted"
            deleter.commit()
            renewal.join(timeout=30)
        assert not renewal.is_alive() and errors == []
        assert home_b.listings() == {}
    finally:
        db.close()
