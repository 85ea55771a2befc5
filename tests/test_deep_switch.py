"""`models: {deep: off}`: the static tier without the deep pass (Auto's choice on a CPU where the
deep model would take hours). Real small profile (MiniLM through llama.cpp), real SQLite and
sqlite-vec, the real CLI, ai-search and daemon in subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qmd_daemon.config import IndexConfig
from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchTrace
from qmd_daemon.settings import Settings
from tests.conftest import MODELS_DIR, run_cli
from tests.daemon.support import make_repo, run_client
from tests.test_static_tier import FILES, NEIGHBOURS, _indexed

SWITCH = "switched off (models: {deep: off})"


def _deep_off(config_file: Path) -> None:
    config = IndexConfig.load(config_file)
    config.set_models({"profile": "small", "deep": "off"})
    config.save()


def test_deep_off_runs_only_the_static_pass_and_search_rescores(small_engine: Engine, tmp_path: Path) -> None:
    _deep_off(small_engine.settings.config_file)
    name = _indexed(small_engine, tmp_path / "p", {**FILES, **NEIGHBOURS})
    report = small_engine.embed([name])
    assert report.static is not None and report.static["embedded"] == 12
    # no chunk went through the deep model, and none is counted as waiting for it
    assert (report.embedded, report.pending, report.model, report.deep_off) == (0, 0, "", SWITCH)
    status = small_engine.status()
    assert status["vectors"]["model"] is None and status["vectors"]["off"] == SWITCH
    assert [c["pending_vectors"] for c in status["collections"]] == [None]
    assert status["static_vectors"]["vectors"] == 12
    trace = SearchTrace()
    hits = [h.path for h in small_engine.search("print text in red", [name], trace=trace)]
    # the static list re-scores lexical's candidates: the colour code above the box of dashes
    assert set(trace.lists) == {"bm25", "static"} and trace.mode == "hybrid"
    assert hits.index("ui/colors.py") < hits.index("ui/banner.py")
    assert (trace.pending_vectors, trace.stale, trace.deep_off) == (0, False, SWITCH)


def test_embed_with_both_tiers_off_says_why_in_one_line(home: Path, small_models: dict[str, Path]) -> None:
    config = IndexConfig.load(home / "config" / "index.yml")
    config.set_models({"profile": "small", "deep": "off", "static": "off"})
    config.save()
    proc = run_cli("embed", env_home=home, QMD_MODELS_DIR=str(MODELS_DIR))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"qmd-daemon: error: cannot embed: deep vectors {SWITCH} and static vectors unavailable "
        "(switched off (models: {static: off}))"
    ), proc.stderr


def test_cli_and_ai_search_say_the_static_vectors_stand_in(daemon_home: Path, tmp_path: Path,
                                                          small_models: dict[str, Path]) -> None:
    """With the deep pass off, no line may count chunks that "still wait for vectors": none will
    ever come. The stderr line says what the search used instead, in-process and from the daemon."""
    repo = make_repo(tmp_path / "repo", {**FILES, **NEIGHBOURS})
    _deep_off(daemon_home / "config" / "index.yml")
    models = {"QMD_MODELS_DIR": str(MODELS_DIR)}
    query = ("print text in red", "--json")
    first = run_client("ai_search.py", *query, "--no-daemon", home=daemon_home, cwd=repo, **models)
    assert first.returncode == 0, first.stderr
    assert "deep vectors yet" not in first.stderr, first.stderr
    # indexed by this call, no static vector yet: keyword hits only, and it says so
    assert f"ai-search: deep vectors are {SWITCH}: keyword-only results" in first.stderr.splitlines()
    embed = run_cli("embed", env_home=daemon_home, check=True, **models)
    assert "static vectors: 12 pooled" in embed.stdout
    assert f"deep vectors: {SWITCH}; search uses the static vectors" in embed.stdout
    assert "embedded" not in embed.stdout
    status = run_cli("status", env_home=daemon_home, check=True, **models).stdout
    assert f"deep vectors: {SWITCH}: the static tier stands in" in status
    assert "static vectors: 12/12 chunks (lexical's candidates re-scored)" in status
    assert "waiting for vectors" not in status
    again = run_client("ai_search.py", *query, "--no-daemon", home=daemon_home, cwd=repo, **models)
    line = f"ai-search: deep vectors are {SWITCH}: keyword hits re-ranked by static vectors"
    assert line in again.stderr.splitlines(), again.stderr
    served = run_client("ai_search.py", *query, home=daemon_home, cwd=repo, **models)  # the daemon's body
    assert served.returncode == 0 and line in served.stderr.splitlines(), served.stderr
    assert json.loads(served.stdout)[0]["path"] == json.loads(again.stdout)[0]["path"]


def test_chunks_waiting_for_deep_vectors_are_said_to_be_re_scored_by_static_ones(
    daemon_home: Path, tmp_path: Path, small_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deep pass on but not run yet, static pass done: the waiting line said "those found by
    keywords only", where the static vectors re-scored them."""
    repo = make_repo(tmp_path / "repo", {**FILES, **NEIGHBOURS})
    config = IndexConfig.load(daemon_home / "config" / "index.yml")
    config.set_models({"profile": "small"})
    config.save()
    models = {"QMD_MODELS_DIR": str(MODELS_DIR)}
    query = ("print text in red", "--json", "--no-daemon")
    first = run_client("ai_search.py", *query, home=daemon_home, cwd=repo, **models)
    said = ("ai-search: results from keywords only (no deep vectors yet: 12 chunks wait for them); this"
            " search ran without the daemon: `qmd-daemon embed` gives them deep vectors")
    assert said in first.stderr.splitlines(), first.stderr
    monkeypatch.setenv("QMD_DAEMON_HOME", str(daemon_home))
    monkeypatch.setenv("QMD_MODELS_DIR", str(MODELS_DIR))
    for var in ("QMD_CONFIG_DIR", "QMD_INDEX_PATH"):
        monkeypatch.delenv(var, raising=False)
    engine = Engine(Settings.from_env())
    try:  # the static pass alone, as the daemon's embed job runs it first
        assert engine.embed_static(engine.collection_ids(list(engine.collections())), progress=False)
    finally:
        engine.close()
    again = run_client("ai_search.py", *query, home=daemon_home, cwd=repo, **models)
    # a new kind of line (the static vectors came): printed at once, not held back as a repeat
    line = ("ai-search: results from keywords re-ranked by static vectors (no deep vectors yet: 12 chunks"
            " wait for them); this search ran without the daemon: `qmd-daemon embed` gives them deep vectors")
    assert line in again.stderr.splitlines(), again.stderr


def test_a_deep_switch_neither_on_nor_off_is_one_line_error(home: Path, tmp_path: Path,
                                                          small_models: dict[str, Path]) -> None:
    """`deep: maybe` was read as "on": hours of deep embedding on the CPU Auto had switched it off
    for. Every command that reads the switch now stops with one line naming the key."""
    config = IndexConfig.load(home / "config" / "index.yml")
    config.set_models({"profile": "small", "deep": "maybe"})
    config.save()
    models = {"QMD_MODELS_DIR": str(MODELS_DIR)}
    repo = make_repo(tmp_path / "repo", FILES)
    run_cli("collection", "add", str(repo), env_home=home, check=True, **models)
    expected = (
        f"qmd-daemon: error: {home / 'config' / 'index.yml'}: models.deep must be on or off, not 'maybe' "
        "(left untouched)"
    )
    for command in (("embed",), ("status",), ("search", "print text in red")):
        proc = run_cli(*command, env_home=home, **models)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.strip().splitlines() == [expected], proc.stderr
