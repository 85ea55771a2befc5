"""The deep embedder takes pending chunks in priority order (store/pending_order.py): the current
collection first, then files edited within the hour, then files searches return, then the rest.

In chunk-id order a file just edited (its chunks re-inserted, so the highest ids) waited behind
every other pending chunk: hours in a 10k-chunk repository at MiniLM's ~9 chunks/s on a CPU.
Real SQLite and sqlite-vec, real MiniLM through llama.cpp (small profile); one batch each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qmd_daemon.config import IndexConfig
from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings
from qmd_daemon.vectorize import BATCH, EmbedHint
from tests.conftest import MODELS_DIR, write_tree

FILES = 40  # one chunk each: more than two batches


def _aged_tree(root: Path, prefix: str) -> Path:
    """FILES small modules, each with its own function, last modified two days ago."""
    files = {
        f"pkg/{prefix}_{i:02d}.py": f"def {prefix}_task_{i}(value):\n    return value * {i} + {i * i}\n"
        for i in range(FILES)
    }
    write_tree(root, files)
    old = time.time() - 2 * 86400
    for rel in files:
        os.utime(root / rel, (old, old))
    return root


def _with_vectors(engine: Engine) -> dict[str, set[str]]:
    """Collection -> paths of its files whose chunk has a vector (one chunk a file here), read
    through the store interfaces, so the same check runs on both backends."""
    vectors = engine.vectors
    assert vectors is not None
    waiting = engine.store.chunks_by_ids([chunk_id for chunk_id, _c, _h in vectors.pending()])
    pending_paths = {row.path for row in waiting.values()}
    found = {name: set(engine.indexed_paths(name)) - pending_paths for name in engine.collections()}
    return {name: paths for name, paths in found.items() if paths}


@pytest.fixture(params=["sqlite", "postgres"])
def prioritized(request: pytest.FixtureRequest, small_engine: Engine, home: Path) -> Engine:
    """The small-profile engine on SQLite, or on PostgreSQL (both sort by pending_order.ORDER_BY)."""
    if request.param == "sqlite":
        return small_engine
    url = request.getfixturevalue("postgres_url")
    request.getfixturevalue("monkeypatch").setenv("QMD_DATABASE_URL", url)
    config = IndexConfig.load(small_engine.settings.config_file)
    config.raw["backend"] = "postgres"
    config.save()
    engine = Engine(Settings.from_env())
    request.addfinalizer(engine.close)
    assert engine.backend.location.startswith("postgres"), engine.backend.location
    return engine


def _cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess, run from `cwd` (its working folder names the repository)."""
    env = dict(os.environ, QMD_DAEMON_HOME=str(home), QMD_MODELS_DIR=str(MODELS_DIR))
    command = [sys.executable, "-c", "from qmd_daemon.cli import main; main()", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _indexed(engine: Engine, root: Path, prefix: str) -> str:
    name = engine.add_collection(_aged_tree(root, prefix), prefix).name
    engine.update([name], progress=False)
    return name


def test_a_file_just_edited_is_embedded_in_the_first_batch(prioritized: Engine, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    name = _indexed(prioritized, root, "mod")
    (root / "pkg/mod_05.py").write_text("def mod_task_5(value):\n    return value - 5  # edited now\n")
    prioritized.update([name], progress=False)

    report = prioritized.embed([name], limit=BATCH)

    assert report.embedded == BATCH and report.pending == FILES - BATCH
    assert "pkg/mod_05.py" in _with_vectors(prioritized)[name], "the edited file waited behind old ones"


def test_a_file_searches_return_goes_before_untouched_ones(prioritized: Engine, tmp_path: Path) -> None:
    name = _indexed(prioritized, tmp_path / "repo", "mod")
    returned = {name: {"pkg/mod_37.py": 3, "pkg/mod_38.py": 1}}

    prioritized.embed([name], limit=BATCH, hint=lambda: EmbedHint(returned=returned))

    embedded = _with_vectors(prioritized)[name]
    assert {"pkg/mod_37.py", "pkg/mod_38.py"} <= embedded and len(embedded) == BATCH


def test_an_edit_goes_before_a_file_searches_return(prioritized: Engine, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    name = _indexed(prioritized, root, "mod")
    (root / "pkg/mod_05.py").write_text("def mod_task_5(value):\n    return value - 5  # edited now\n")
    prioritized.update([name], progress=False)
    returned = {name: {f"pkg/mod_{i:02d}.py": 2 for i in range(20, 40)}}  # more than a batch

    prioritized.embed([name], limit=BATCH, hint=lambda: EmbedHint(returned=returned))

    embedded = _with_vectors(prioritized)[name]
    assert "pkg/mod_05.py" in embedded and len(embedded - set(returned[name])) == 1


def test_the_current_collection_goes_before_the_others(prioritized: Engine, tmp_path: Path) -> None:
    first = _indexed(prioritized, tmp_path / "first", "alpha")  # the lower chunk ids
    current = _indexed(prioritized, tmp_path / "current", "beta")

    prioritized.embed(None, limit=BATCH, hint=lambda: EmbedHint(current=current))

    embedded = _with_vectors(prioritized)
    assert first not in embedded and len(embedded[current]) == BATCH


def test_status_says_how_much_of_the_current_repository_has_vectors(
    small_engine: Engine, tmp_path: Path, home: Path
) -> None:
    root = tmp_path / "repo"
    name = _indexed(small_engine, root, "mod")
    other = _indexed(small_engine, tmp_path / "other", "other")
    small_engine.embed([name], limit=BATCH)

    shown = _cli(home, root / "pkg", "status", "--json")
    assert shown.returncode == 0, shown.stderr
    info = json.loads(shown.stdout)
    rows = {row["name"]: row for row in info["collections"]}
    assert info["current_collection"] == name
    assert (rows[name]["with_vectors"], rows[other]["with_vectors"]) == (BATCH, 0)
    text = _cli(home, root, "status")
    line = f"  {name} (this repository): {FILES} files, {FILES} chunks, {BATCH} with vectors (40%), "
    assert line + f"{FILES - BATCH} waiting for vectors" in text.stdout.splitlines()


def test_the_cli_embeds_with_a_corrupt_counts_file_and_says_it_ignored_it(
    small_engine: Engine, tmp_path: Path, home: Path
) -> None:
    root = tmp_path / "repo"
    name = _indexed(small_engine, root, "mod")
    counts = small_engine.settings.state_dir / "hit_counts.json"
    counts.parent.mkdir(parents=True, exist_ok=True)
    counts.write_text('{"files": [["repo"]], "searches": "x"}')

    done = _cli(home, root, "embed", "--json")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pending"] == 0
    assert [line for line in done.stderr.splitlines() if "hit_counts.json" in line] == [
        f"ignoring {counts} (not enough values to unpack (expected 3, got 1)): search hit counts start afresh"
    ]
    (row,) = small_engine.status()["collections"]
    assert (row["name"], row["with_vectors"]) == (name, FILES)
