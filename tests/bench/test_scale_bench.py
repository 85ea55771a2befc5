"""bench/scale.py's plumbing: a home copied from another bench home writes only to its own trees,
and the Done-when table says met / NOT met / not measured against issue 15's targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import scale
from qmd_daemon.config import CollectionConfig, IndexConfig


def test_a_copied_home_points_its_copied_collections_at_its_own_trees(tmp_path: Path) -> None:
    other, home, corpus = tmp_path / "home-a", tmp_path / "home-b", tmp_path / "corpora" / "django"
    for tree in (other / "trees" / "copy1" / "aiohttp", home / "trees" / "copy1" / "aiohttp", corpus,
                 other / "trees" / "copy2" / "sympy"):
        tree.mkdir(parents=True)
    config_file = home / "config" / "index.yml"
    config_file.parent.mkdir(parents=True)
    with IndexConfig.editing(config_file) as config:
        config.set_collection(CollectionConfig("aiohttp-copy1", other / "trees" / "copy1" / "aiohttp"))
        config.set_collection(CollectionConfig("sympy-copy2", other / "trees" / "copy2" / "sympy"))
        config.set_collection(CollectionConfig("django", corpus))
    scale.own_trees(config_file, home)
    paths = {name: c.path for name, c in IndexConfig.load(config_file).collections().items()}
    assert paths["aiohttp-copy1"] == home / "trees" / "copy1" / "aiohttp"
    assert paths["sympy-copy2"] == other / "trees" / "copy2" / "sympy", "no copy of it here: left as is"
    assert paths["django"] == corpus


def test_the_done_when_table_judges_each_row_against_its_target(capsys: pytest.CaptureFixture[str]) -> None:
    result = {"chunks": 476_000, "collections": 58, "load_average": (1.0, 2.0, 3.0),
              "bug_reports_cpu_p95_ms": 149.0, "questions_cpu_p50_ms": 41.0, "knn_all_recall_at_10": 0.96}
    scale.print_done_when(result)
    lines = {line.split("  ")[1].strip(): line for line in capsys.readouterr().out.splitlines()
             if line.startswith("  ")}
    assert "(target <= 150: met)" in lines["476k chunks: bug reports p95, CPU"]
    assert "NOT met" in lines["476k chunks: questions p50, CPU"]
    assert "(target >= 0.95: met)" in lines["1M x 1024 KNN all collections recall@10"]
    assert "not measured" in lines["1M x 1024 KNN one collection p50"]


def test_the_edit_series_writes_every_update_and_puts_the_files_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    tree = tmp_path / "trees" / "copy1" / "qmd_daemon"
    shutil.copytree(Path(scale.REPO_ROOT) / "qmd_daemon", tree, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "home"))
    engine = Engine(Settings.from_env())
    try:
        engine.add_collection(tree, "qmd_daemon-copy1")
        engine.update(progress=False)
        rows = scale.edit_series_rows(engine, 3)
        assert engine.update(progress=False)[0].changed == 0, "the restoring update already ran"
    finally:
        engine.close()
    assert rows["edits"] == 3 and len(rows["edits_series"]) == 3
    assert rows["edits_segments_max"] >= rows["edits_segments_last"] >= 1
    assert 0 < rows["edits_update_p50_s"] <= rows["edits_update_max_s"]
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before
