"""bench/retrieval.py plumbing (scopes, path prefixes, tables) and bench/ingest.py's tree generator."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bench import retrieval
from bench.ingest import generate_tree
from tests.conftest import REPO_ROOT


def _row(**kw):
    base = {"set": "queries", "index": 0, "repo": "aiohttp", "root": "aiohttp", "query": "q",
            "relevant": ["aiohttp/client.py"], "secondary": [], "category": "semantic"}
    return {**base, **kw}


def test_target_scopes(tmp_path):
    t = retrieval.target_for(_row(), "root", tmp_path)
    assert (t.name, t.folder, t.prefix) == ("aiohttp-root", tmp_path / "aiohttp" / "aiohttp", "aiohttp/")
    t = retrieval.target_for(_row(), "whole", tmp_path)
    assert (t.name, t.folder, t.prefix) == ("aiohttp", tmp_path / "aiohttp", "")
    # the issues set is always the whole tree
    t = retrieval.target_for(_row(set="issues"), "root", tmp_path)
    assert (t.name, t.prefix) == ("aiohttp", "")



def test_broad_set_scopes_languages_and_set_names(tmp_path):
    broad = _row(set="broad", repo="cobra", root="", language="go")
    # root "" is the whole repository: one collection, no prefix, in either scope
    for scope in ("root", "whole"):
        t = retrieval.target_for(broad, scope, tmp_path)
        assert (t.name, t.folder, t.prefix) == ("cobra", tmp_path / "cobra", "")
    t = retrieval.target_for({**broad, "repo": "zls", "root": "src", "language": "zig"}, "root", tmp_path)
    assert (t.name, t.prefix) == ("zls-root", "src/")
    t = retrieval.target_for(_row(set="issues-git", repo="sympy-git"), "root", tmp_path)
    assert (t.name, t.prefix) == ("sympy-git", "")
    scores = {"ms": 1.0, "ndcg@10": 1.0, "acc@1": 1.0, "acc@5": 1.0, "acc@10": 1.0, "mrr@10": 1.0}
    rows = [{"set": "broad", "repo": r, "category": "semantic", "language": lang, **scores}
            for r, lang in (("a", "go"), ("b", "zig"))]
    groups = retrieval.group_rows(rows)
    assert [len(groups["lang:go"]), len(groups["lang:zig"])] == [1, 1]
    assert "acc@10" in retrieval.format_method_table("lexical", "issues-git", rows)
    assert retrieval.parse_sets("all") == list(retrieval.SET_FILES)
    assert retrieval.parse_sets("broad,issues-git") == ["broad", "issues-git"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown set"):
        retrieval.parse_sets("broad,nope")


def test_run_method_prefixes_reduces_and_scores(tmp_path):
    row = _row(secondary=["aiohttp/formdata.py"])
    target = retrieval.target_for(row, "root", tmp_path)
    hits = ["x.py", "x.py", "client.py", "formdata.py"]  # collection-relative, per chunk
    out = retrieval.run_method(lambda q, c: hits, [row], {("queries", "aiohttp"): target}, "t")
    r = out[0]
    assert r["files"] == ["aiohttp/x.py", "aiohttp/client.py", "aiohttp/formdata.py"]
    assert r["acc@1"] == 0.0 and r["acc@5"] == 1.0 and r["mrr@10"] == 0.5
    assert 0 < r["ndcg@10"] < 1 and r["ms"] >= 0


def test_tables_show_groups_and_delta():
    rows = [{"set": "queries", "repo": "a", "category": "symbol", "ms": 1.0, "ndcg@10": 1.0, "acc@1": 1.0,
             "acc@5": 1.0, "acc@10": 1.0, "mrr@10": 1.0}]
    rows.append({**rows[0], "repo": "b", "category": "semantic"})
    worse = [{**r, "ndcg@10": 0.25} for r in rows]
    table = retrieval.format_method_table("engine", "queries", rows)
    assert "repo:a" in table and "cat:symbol" in table and "ALL" in table and "acc@10" not in table
    # a single category (the issues set) is not repeated as its own row
    assert "cat:" not in retrieval.format_method_table("engine", "issues", rows[:1])
    assert "acc@10" in retrieval.format_method_table("engine", "issues", rows)
    cmp = retrieval.format_comparison("queries", {"engine": rows, retrieval.BASELINE: worse}, "ndcg@10")
    assert "+0.750" in cmp


def test_methods_registry_has_baselines_and_engine_variants():
    assert retrieval.BASELINE in retrieval.METHODS and "bm25-code" in retrieval.METHODS
    assert all(name in retrieval.METHODS for name in retrieval.ENGINE_VARIANTS)


def test_feedback_variants_keep_the_way_their_name_says():
    """A plain `lexical-prf-...` is the second FTS query docs/ranking.md measured, `-rescore` the
    re-scoring of lexical's candidates: once the product's default became the re-scoring, the plain
    names silently ran it too (the two were one method under two names)."""
    from qmd_daemon.search.pipeline import SearchOptions

    variants = retrieval.ENGINE_VARIANTS
    for name in ("lexical-prf-k5-m20-w0.1", "lexical-prf-k5-m10-w0.2+reports"):
        assert SearchOptions(**variants[name]).prf_rescore is False, name
    assert SearchOptions(**variants["lexical-prf-k5-m20-w0.1-rescore"]).prf_rescore is True


def test_missing_corpora_prints_hint(tmp_path, capsys):
    assert retrieval.main(["--corpora", str(tmp_path / "nope"), "--files", "walk"]) == 2
    assert "get-dev-corpora.sh" in capsys.readouterr().err


def test_generate_tree_is_deterministic(tmp_path):
    a = generate_tree(tmp_path / "a", 40, seed=3)
    b = generate_tree(tmp_path / "b", 40, seed=3)
    assert a == b and len(a) == 40
    assert all((tmp_path / "a" / p).read_text() == (tmp_path / "b" / p).read_text() for p in a)
    assert {p.rsplit(".", 1)[1] for p in a} <= {"py", "js", "go", "md"}
    assert (tmp_path / "a" / ".gitignore").is_file() and (tmp_path / "a" / "build").is_dir()
    sizes = [len((tmp_path / "a" / p).read_text().splitlines()) for p in a]
    assert min(sizes) >= 40 and max(sizes) <= 260


def _tiny_eval(tmp_path: Path) -> tuple[Path, Path]:
    corpora = tmp_path / "corpora"
    pkg = corpora / "demo" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "pool.py").write_text("class ConnectionPool:\n    '''Pooling of TCP connections.'''\n")
    (pkg / "cookies.py").write_text("class CookieJar:\n    def update_cookies(self): ...\n")
    (corpora / "demo" / "README.md").write_text("# demo\n")
    evald = tmp_path / "eval"
    evald.mkdir()
    q = {"repo": "demo", "root": "demo", "query": "TCP connection pooling", "relevant": ["demo/pool.py"],
         "secondary": [], "category": "semantic"}
    (evald / "dev-queries.jsonl").write_text(json.dumps(q) + "\n")
    return corpora, evald


def test_walk_baseline_end_to_end(tmp_path, monkeypatch, capsys):
    corpora, evald = _tiny_eval(tmp_path)
    monkeypatch.setattr(retrieval, "EVAL_DIR", evald)
    out = tmp_path / "r.json"
    assert retrieval.main(["--corpora", str(corpora), "--files", "walk", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    q = data["sets"]["queries"][retrieval.BASELINE]["queries"][0]
    assert q["files"][0] == "demo/pool.py" and q["acc@1"] == 1.0


def test_engine_end_to_end(tmp_path, monkeypatch):
    corpora, evald = _tiny_eval(tmp_path)
    monkeypatch.setattr(retrieval, "EVAL_DIR", evald)
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "home"))
    out = tmp_path / "r.json"
    argv = ["--corpora", str(corpora), "--home", str(tmp_path / "home"), "--json", str(out)]
    assert retrieval.main(argv) == 0
    assert retrieval.main(argv) == 0  # re-run on the same home: registration is idempotent
    data = json.loads(out.read_text())
    base = data["sets"]["queries"][retrieval.BASELINE]["queries"][0]
    eng = data["sets"]["queries"]["engine"]["queries"][0]
    assert base["files"][0] == "demo/pool.py"
    assert eng["files"] and eng["files"][0] == "demo/pool.py"


def test_skip_update_refuses_an_index_built_in_another_format(tmp_path, monkeypatch):
    """--skip-update once measured, for a whole session, an index chunked by an older chunker."""
    corpora, evald = _tiny_eval(tmp_path)
    monkeypatch.setattr(retrieval, "EVAL_DIR", evald)
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "home"))
    argv = ["--corpora", str(corpora), "--home", str(tmp_path / "home"), "--methods", "lexical"]
    assert retrieval.main(argv) == 0
    assert retrieval.main([*argv, "--skip-update"]) == 0  # built by this code: fine
    index = sqlite3.connect(tmp_path / "home" / "cache" / "index.sqlite")
    with index:
        index.execute("UPDATE collections SET index_format = 'older-chunker'")
    index.close()
    with pytest.raises(SystemExit, match="indexed as 'older-chunker'.*without --skip-update"):
        retrieval.main([*argv, "--skip-update"])


def test_term_count_fill_counts_an_index_the_same_on_both_sides_and_leaves_it_as_it_was(
    tmp_path, monkeypatch, capsys
):
    from bench import term_count_fill
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    generate_tree(tmp_path / "tree", n_files=30, seed=3)
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "home"))
    engine = Engine(Settings.from_env())
    name = engine.add_collection(tmp_path / "tree").name
    engine.update([name], progress=False)
    index = engine.settings.index_path
    engine.close()
    before = index.read_bytes()
    assert term_count_fill.main(["--index", str(index), "--baseline", str(term_count_fill.REPO_ROOT)]) == 0
    lines = capsys.readouterr().out.splitlines()
    counts = [line.split(":", 1)[1].split(",", 2)[2] for line in lines[:2]]  # rows, df total
    assert counts[0] == counts[1] and " 0 rows" not in counts[0]
    assert lines[2].startswith("CPU this / baseline = ")
    assert index.read_bytes() == before


def test_soak_without_the_corpora_says_so_in_one_line(tmp_path):
    # a machine without the eval corpora (CI, a fresh clone): a clear line and exit 2, not a
    # FileNotFoundError traceback from the first copy
    models = tmp_path / "models"
    models.mkdir()
    env = dict(os.environ, HOME=str(tmp_path))
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "bench" / "soak.py"), "--models-dir", str(models)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("soak: error: no click, cobra, bats-core in ")
    assert proc.stderr.count("\n") == 1


def test_submodule_covers_bench_runs_and_prints_its_ratio(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), GIT_CONFIG_NOSYSTEM="1")
    script = REPO_ROOT / "bench" / "submodule_covers.py"
    proc = subprocess.run([sys.executable, str(script), "--files", "30", "--rounds", "2"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ratio before/after" in proc.stdout


def test_ingest_compares_full_index_cpu_with_a_baseline_checkout(tmp_path, capsys):
    from bench import ingest

    argv = ["--files", "30", "--rounds", "2", "--dir", str(tmp_path / "work"), "--no-git"]
    assert ingest.main([*argv, "--baseline", str(ingest.REPO_ROOT)]) == 0
    out = capsys.readouterr().out
    rounds = [line for line in out.splitlines() if line.startswith("round ")]
    assert len(rounds) == 2 and all(" ratio " in line for line in rounds)
    assert "median CPU ratio this / baseline = " in out

    assert ingest.main([*argv[:4], "--baseline", str(tmp_path)]) == 2
    assert f"{tmp_path} is not a qmd-daemon checkout" in capsys.readouterr().err


def test_the_private_name_variant_holds_every_other_c23_rule_off():
    # `lexical-underscore-only` measures the private-name rule alone (docs/ranking.md): the rules
    # added beside it (initials, ports, v1/ beside its replacement, configuration modules) are off
    weights = retrieval.ENGINE_VARIANTS["lexical-underscore-only"]["weights"]
    assert (weights.initials, weights.platform_penalty, weights.superseded_only,
            weights.config_module_penalty) == (False, 1.0, False, 1.0)
