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
