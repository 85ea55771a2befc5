"""`collection remove` beside a search of the same collection: the search answers what the index
held or says the collection is gone, never an empty list as if nothing matched; a remove killed
halfway is finished by the next update or remove, and only the collection it named is touched
(a PostgreSQL index is shared: another user's collections in it are not this index.yml's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from qmd_daemon.config import IndexConfig
from qmd_daemon.engine import Engine
from qmd_daemon.errors import UnknownCollectionError
from qmd_daemon.settings import Settings
from tests.conftest import REPO_ROOT, indexed, run_cli

WALRUS = {"src/walrus.py": "def walrus_tusk_length():\n    return 3\n"}
NARWHAL = {"src/narwhal.py": "def narwhal_horn_length():\n    return 2\n"}

# A `collection remove` that dies (SIGKILL-like: no cleanup) where the collection's rows would go
_DIES_MIDWAY = """
import os, sys
from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings
from qmd_daemon.store.index_store import IndexStore

IndexStore.remove_collection = lambda self, name: os._exit(137)
if os.environ.get("QMD_DATABASE_URL"):
    from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore

    PostgresChunkStore.remove_collection = lambda self, name: os._exit(137)
Engine(Settings.from_env()).remove_collection(sys.argv[1])
"""


@pytest.mark.parametrize("named", [True, False])
def test_a_search_whose_collection_is_removed_under_it_says_so(
    home: Path, tmp_path: Path, named: bool
) -> None:
    searcher = Engine(Settings.from_env())
    try:
        name = indexed(searcher, tmp_path / "proj", WALRUS)
        scope = [name] if named else None
        assert searcher.search("walrus_tusk_length", scope)[0].path == "src/walrus.py"
        looked_up = searcher.collection_ids

        def remove_after_the_lookup(names: list[str]) -> list[int]:
            # the remove (a real CLI process) lands between the search's scope lookup and its
            # reads: the interleaving a real race gives one time in many, here every time
            ids = looked_up(names)
            run_cli("collection", "remove", name, env_home=home, check=True)
            return ids

        searcher.collection_ids = remove_after_the_lookup  # type: ignore[method-assign]
        with pytest.raises(UnknownCollectionError, match=f"'{name}' was removed while this search ran"):
            searcher.search("walrus_tusk_length", scope)
    finally:
        searcher.close()


def test_a_remove_killed_halfway_is_finished_by_the_next_update_and_touches_nothing_else(
    home: Path, tmp_path: Path
) -> None:
    engine = Engine(Settings.from_env())
    other_user = dict(
        QMD_CONFIG_DIR=str(tmp_path / "other-user"), QMD_INDEX_PATH=str(engine.settings.index_path)
    )
    try:
        name = indexed(engine, tmp_path / "proj", WALRUS)
        kept = indexed(engine, tmp_path / "kept", NARWHAL)
        # a collection of the same index registered by another index.yml (a shared PostgreSQL
        # store's other user): in no index.yml of ours, and none of ours to delete
        theirs = tmp_path / "theirs"
        indexed_by_them = {"src/theirs.py": "def their_function():\n    return 1\n"}
        for rel, text in indexed_by_them.items():
            (theirs / rel).parent.mkdir(parents=True, exist_ok=True)
            (theirs / rel).write_text(text)
        run_cli("collection", "add", str(theirs), "--name", "theirs", env_home=home, check=True, **other_user)
        run_cli("update", env_home=home, check=True, **other_user)
        env = dict(os.environ, QMD_DAEMON_HOME=str(home))
        died = subprocess.run([sys.executable, "-c", _DIES_MIDWAY, name], env=env, cwd=REPO_ROOT, timeout=60)
        assert died.returncode == 137
        # index.yml went first: unlisted, its rows still there, and a search says it is gone
        assert name not in engine.collections()
        assert engine.store.collection_id(name) is not None
        shown = run_cli("status", env_home=home, check=True).stdout
        note = "(being removed: a `collection remove` was cut short; the next update finishes it)"
        assert f"{name} {note}" in shown
        with pytest.raises(UnknownCollectionError, match=f"no collection named '{name}'"):
            engine.search("walrus_tusk_length", [name])
        assert [h.collection for h in engine.search("walrus_tusk_length narwhal_horn_length")] == [kept]
        run_cli("update", env_home=home, check=True)
        assert engine.store.collection_id(name) is None
        assert "removing" not in IndexConfig.load(engine.settings.config_file).raw
        assert engine.store.collection_id(kept) is not None
        assert engine.store.collection_id("theirs") is not None  # not ours: not swept
        # killed again; this time `collection remove` finishes it
        indexed(engine, tmp_path / "proj", WALRUS)
        died = subprocess.run([sys.executable, "-c", _DIES_MIDWAY, name], env=env, cwd=REPO_ROOT, timeout=60)
        assert died.returncode == 137
        again = run_cli("collection", "remove", name, env_home=home)
        assert (again.returncode, again.stdout.strip()) == (0, f"removed {name}")
        assert engine.store.collection_id(name) is None
        assert run_cli("collection", "remove", name, env_home=home).returncode == 2  # now unknown
        assert engine.store.collection_id("theirs") is not None
    finally:
        engine.close()


def test_a_collection_added_back_after_a_remove_killed_halfway_keeps_its_rows(
    home: Path, tmp_path: Path
) -> None:
    """The user (or ai-search's next search there) adds the folder back before any update ran:
    the next update finished the old removal and deleted the rows the re-added collection uses."""
    engine = Engine(Settings.from_env())
    try:
        name = indexed(engine, tmp_path / "proj", WALRUS)
        collection_id = engine.store.collection_id(name)
        env = dict(os.environ, QMD_DAEMON_HOME=str(home))
        died = subprocess.run([sys.executable, "-c", _DIES_MIDWAY, name], env=env, cwd=REPO_ROOT, timeout=60)
        assert died.returncode == 137 and name in IndexConfig.load(engine.settings.config_file).removing()
        folder = str(tmp_path / "proj")
        run_cli("collection", "add", folder, "--name", name, "--no-update", env_home=home, check=True)
        assert "removing" not in IndexConfig.load(engine.settings.config_file).raw
        run_cli("update", env_home=home, check=True)
        assert engine.store.collection_id(name) == collection_id  # the same rows, not a re-index
        assert [h.collection for h in engine.search("walrus_tusk_length", [name])] == [name]
    finally:
        engine.close()


def test_a_remove_killed_halfway_on_a_shared_postgres_index_leaves_the_other_users_collection(
    tmp_path: Path, postgres_url: str
) -> None:
    """Two homes share one PostgreSQL index, each with a collection of its own: A's remove dies
    halfway, A's next update finishes it and B's collection is left as it was."""
    homes = {}
    for user, files in (("a", WALRUS), ("b", NARWHAL)):
        home = tmp_path / f"home-{user}"
        (home / "config").mkdir(parents=True)
        (home / "config" / "index.yml").write_text("backend: postgres\n", encoding="utf-8")
        repo = tmp_path / f"repo-{user}"
        for rel, text in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        run_cli("collection", "add", str(repo), "--name", f"of-{user}", env_home=home, check=True,
                QMD_DATABASE_URL=postgres_url)  # fmt: skip
        run_cli("update", env_home=home, check=True, QMD_DATABASE_URL=postgres_url)
        homes[user] = home
    env = dict(os.environ, QMD_DAEMON_HOME=str(homes["a"]), QMD_DATABASE_URL=postgres_url)
    died = subprocess.run([sys.executable, "-c", _DIES_MIDWAY, "of-a"], env=env, cwd=REPO_ROOT, timeout=60)
    assert died.returncode == 137
    refused = run_cli("search", "walrus_tusk_length", "-c", "of-a", env_home=homes["a"],
                      QMD_DATABASE_URL=postgres_url)  # fmt: skip
    assert refused.returncode == 2 and "no collection named 'of-a'" in refused.stderr
    with psycopg.connect(postgres_url) as conn:
        assert {r[0] for r in conn.execute("SELECT name FROM collections")} == {"of-a", "of-b"}
    run_cli("update", env_home=homes["a"], check=True, QMD_DATABASE_URL=postgres_url)
    with psycopg.connect(postgres_url) as conn:
        assert {r[0] for r in conn.execute("SELECT name FROM collections")} == {"of-b"}
    found = run_cli("search", "narwhal_horn_length", "--json", env_home=homes["b"], check=True,
                    QMD_DATABASE_URL=postgres_url)  # fmt: skip
    assert '"src/narwhal.py"' in found.stdout
