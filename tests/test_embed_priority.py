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

from qmd_daemon.engine import Engine
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
    """Collection -> paths of the files that have at least one chunk with a vector."""
    rows = engine.store.conn.execute(
        """SELECT DISTINCT o.name, f.path FROM chunk_codes k JOIN chunks c ON c.id = k.chunk_id
           JOIN files f ON f.id = c.file_id JOIN collections o ON o.id = f.collection_id"""
    ).fetchall()
    found: dict[str, set[str]] = {}
    for name, path in rows:
        found.setdefault(name, set()).add(path)
    return found


def _indexed(engine: Engine, root: Path, prefix: str) -> str:
    name = engine.add_collection(_aged_tree(root, prefix), prefix).name
    engine.update([name], progress=False)
    return name


def test_a_file_just_edited_is_embedded_in_the_first_batch(small_engine: Engine, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    name = _indexed(small_engine, root, "mod")
    (root / "pkg/mod_05.py").write_text("def mod_task_5(value):\n    return value - 5  # edited now\n")
    small_engine.update([name], progress=False)

    report = small_engine.embed([name], limit=BATCH)

    assert report.embedded == BATCH and report.pending == FILES - BATCH
    assert "pkg/mod_05.py" in _with_vectors(small_engine)[name], "the edited file waited behind old ones"


def test_a_file_searches_return_goes_before_untouched_ones(small_engine: Engine, tmp_path: Path) -> None:
    name = _indexed(small_engine, tmp_path / "repo", "mod")
    returned = {name: {"pkg/mod_37.py": 3, "pkg/mod_38.py": 1}}

    small_engine.embed([name], limit=BATCH, hint=lambda: EmbedHint(returned=returned))

    embedded = _with_vectors(small_engine)[name]
    assert {"pkg/mod_37.py", "pkg/mod_38.py"} <= embedded and len(embedded) == BATCH


def test_an_edit_goes_before_a_file_searches_return(small_engine: Engine, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    name = _indexed(small_engine, root, "mod")
    (root / "pkg/mod_05.py").write_text("def mod_task_5(value):\n    return value - 5  # edited now\n")
    small_engine.update([name], progress=False)
    returned = {name: {f"pkg/mod_{i:02d}.py": 2 for i in range(20, 40)}}  # more than a batch

    small_engine.embed([name], limit=BATCH, hint=lambda: EmbedHint(returned=returned))

    embedded = _with_vectors(small_engine)[name]
    assert "pkg/mod_05.py" in embedded and len(embedded - set(returned[name])) == 1


def test_the_current_collection_goes_before_the_others(small_engine: Engine, tmp_path: Path) -> None:
    first = _indexed(small_engine, tmp_path / "first", "alpha")  # the lower chunk ids
    current = _indexed(small_engine, tmp_path / "current", "beta")

    small_engine.embed(None, limit=BATCH, hint=lambda: EmbedHint(current=current))

    embedded = _with_vectors(small_engine)
    assert first not in embedded and len(embedded[current]) == BATCH


def test_status_says_how_much_of_the_current_repository_has_vectors(
    small_engine: Engine, tmp_path: Path, home: Path
) -> None:
    root = tmp_path / "repo"
    name = _indexed(small_engine, root, "mod")
    other = _indexed(small_engine, tmp_path / "other", "other")
    small_engine.embed([name], limit=BATCH)
    env = dict(os.environ, QMD_DAEMON_HOME=str(home), QMD_MODELS_DIR=str(MODELS_DIR))
    command = [sys.executable, "-c", "from qmd_daemon.cli import main; main()", "status"]

    shown = subprocess.run([*command, "--json"], cwd=root / "pkg", env=env, capture_output=True, text=True,
                           timeout=120, check=True)  # fmt: skip
    info = json.loads(shown.stdout)
    rows = {row["name"]: row for row in info["collections"]}
    assert info["current_collection"] == name
    assert (rows[name]["with_vectors"], rows[other]["with_vectors"]) == (BATCH, 0)
    text = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=True)
    line = f"  {name} (this repository): {FILES} files, {FILES} chunks, {BATCH} with vectors (40%), "
    assert line + f"{FILES - BATCH} waiting for vectors" in text.stdout.splitlines()
