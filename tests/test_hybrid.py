"""Vectors end to end with the real small profile (MiniLM GGUF through llama.cpp, sqlite-vec)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qmd_daemon.config import IndexConfig
from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchOptions, SearchTrace
from qmd_daemon.vectorize import EmbedBusy, embed_lock
from tests.conftest import write_tree
from tests.models.tiny_qwen3 import write_tiny_qwen3

FILES = {
    "net/retry.py": 'def backoff_delays(attempts):\n    """Wait longer after every failed attempt."""\n'
    "    return [2 ** n for n in range(attempts)]\n",
    "text/slug.py": "def slugify(title):\n    return '-'.join(title.lower().split())\n",
    "db/pool.py": "class ConnectionPool:\n    def acquire(self):\n        return self._idle.pop()\n",
}


def _vector_top(engine: Engine, name: str) -> str:
    """The vector-only top hit for a question that shares no word with its answer."""
    options = SearchOptions(lexical=False, boosts=False)
    return engine.search("make a url friendly version of a headline", [name], options=options)[0].path


def test_embed_then_vectors_find_meaning_without_shared_words(small_engine: Engine, tmp_path: Path) -> None:
    name = small_engine.add_collection(write_tree(tmp_path / "p", FILES)).name
    small_engine.update([name])
    report = small_engine.embed([name])
    assert report.embedded == 3 and report.pending == 0
    assert small_engine.embed([name]).embedded == 0, "nothing left to embed"
    trace = SearchTrace()
    hits = small_engine.search("exponential wait between retries", [name], trace=trace)
    assert "vec" in trace.lists and not trace.stale
    assert hits[0].path == "net/retry.py"
    assert _vector_top(small_engine, name) == "text/slug.py"


def test_search_marks_stale_while_chunks_wait_for_vectors(small_engine: Engine, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "p", FILES)
    name = small_engine.add_collection(root).name
    small_engine.update([name])
    small_engine.embed([name])
    (root / "extra.py").write_text("def extra_helper():\n    return 42\n")
    small_engine.update([name])
    trace = SearchTrace()
    hits = small_engine.search("extra_helper", [name], trace=trace)
    assert trace.stale and hits[0].path == "extra.py", "BM25 still finds chunks that have no vector yet"
    assert small_engine.status()["vectors"]["pending"] == 1
    assert [c["pending_vectors"] for c in small_engine.status()["collections"]] == [1]
    # The pending count is kept between searches until the database changes, on this connection
    # (embed below) or on another one (a second engine, as the daemon's writer is).
    small_engine.embed([name])
    trace = SearchTrace()
    small_engine.search("extra_helper", [name], trace=trace)
    assert not trace.stale
    (root / "more.py").write_text("def more_helper():\n    return 43\n")
    other = Engine(small_engine.settings)
    try:
        other.update([name])
    finally:
        other.close()
    trace = SearchTrace()
    small_engine.search("more_helper", [name], trace=trace)
    assert trace.stale, "another connection's commit is seen"


def test_model_change_reembeds_cleanly(small_engine: Engine, tmp_path: Path) -> None:
    name = small_engine.add_collection(write_tree(tmp_path / "p", FILES)).name
    small_engine.update([name])
    first = small_engine.embed([name])
    tiny = write_tiny_qwen3(tmp_path / "tiny-embed.gguf", pooling_last=True)
    config = IndexConfig.load(small_engine.settings.config_file)
    config.set_models({"embed": str(tiny)})
    config.save()
    fresh = Engine(small_engine.settings)
    try:
        report = fresh.embed([name])
        assert report.reset and report.embedded == 3 and report.model != first.model
        assert fresh.status()["vectors"]["dim"] != 384
    finally:
        fresh.close()


def test_second_embed_run_is_refused_while_one_holds_the_lock(tmp_path: Path) -> None:
    lock = tmp_path / "embed.lock"
    with embed_lock(lock), pytest.raises(EmbedBusy), embed_lock(lock):
        pass


def test_killed_embed_resumes_where_it_stopped(small_engine: Engine, tmp_path: Path) -> None:
    files = {
        f"m{i}.py": f"def function_{i}(value):\n    return value * {i} + {i * i}\n" * 10 for i in range(60)
    }
    name = small_engine.add_collection(write_tree(tmp_path / "p", files)).name
    small_engine.update([name])
    env = dict(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from qmd_daemon.cli import main; main()", "embed"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    vectors = small_engine.vectors
    while time.monotonic() < deadline and proc.poll() is None:
        model = vectors.active_model()
        if model and vectors.pending_count() < small_engine.store.chunk_count(
            small_engine.store.collection_id(name)
        ):
            break
        time.sleep(0.2)
    assert proc.poll() is None, "embed finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left = vectors.pending_count()
    assert left > 0
    report = small_engine.embed([name])
    assert report.embedded == left and report.pending == 0


def test_int8_quantization_from_config_reembeds_and_still_finds(small_engine: Engine, tmp_path: Path) -> None:
    name = small_engine.add_collection(write_tree(tmp_path / "p", FILES)).name
    small_engine.update([name])
    small_engine.embed([name])
    config = IndexConfig.load(small_engine.settings.config_file)
    config.set_models({"quantization": "int8"})
    config.save()
    report = small_engine.embed([name])
    assert report.reset and report.embedded == 3
    assert small_engine.status()["vectors"]["pending"] == 0
    assert _vector_top(small_engine, name) == "text/slug.py"


def test_a_live_engine_follows_a_changed_models_block(small_engine: Engine, tmp_path: Path) -> None:
    first = small_engine.models.embedder()
    tiny = write_tiny_qwen3(tmp_path / "tiny-embed.gguf", pooling_last=True)
    config = IndexConfig.load(small_engine.settings.config_file)
    config.set_models({"embed": str(tiny)})
    config.save()
    second = small_engine.models.embedder()
    assert first is not None and second is not None and second.fingerprint != first.fingerprint
    writer = Engine(small_engine.settings)
    writer.share_models_with(small_engine)
    assert writer.models is small_engine.models
    writer.close()


def test_term_feedback_runs_beside_the_deep_list(small_engine: Engine, tmp_path: Path) -> None:
    """Feedback's list is fused beside deep vectors too (docs/ranking.md "Feedback beside deep
    vectors, re-judged"); `prf_with_deep=False` is the old hybrid, kept for the comparison."""
    from tests.search.test_proximity_feedback import HELPERS, NOTE, OTHERS, RETRIER

    files = {"notes.py": NOTE, "retrier.py": RETRIER, **HELPERS, **OTHERS}
    name = small_engine.add_collection(write_tree(tmp_path / "p", files)).name
    small_engine.update([name])
    assert small_engine.embed([name]).pending == 0
    question = "retry failed requests"
    trace = SearchTrace()
    small_engine.search(question, [name], trace=trace)
    assert {"bm25", "vec", "bm25:prf"} <= set(trace.lists) and trace.mode == "hybrid"
    without = SearchTrace()
    small_engine.search(question, [name], trace=without, options=SearchOptions(prf_with_deep=False))
    assert set(without.lists) == {"bm25", "vec"}
