"""While chunks wait for vectors, searches say so: the trace (and the daemon's /search body) carry
the mode and the pending count, and ai-search prints one stderr line while stdout stays a list.
Real small profile (MiniLM through llama.cpp), real sqlite-vec, real client subprocess."""

import http.client
import json
from pathlib import Path

from qmd_daemon.config import IndexConfig
from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchOptions, SearchTrace
from tests.conftest import MODELS_DIR, write_tree
from tests.daemon.support import make_repo, run_client, state_of

FILES = {
    "net/retry.py": "def backoff_delays(attempts):\n    return [2 ** n for n in range(attempts)]\n",
    "text/slug.py": "def slugify(title):\n    return '-'.join(title.lower().split())\n",
}


def _traced(engine: Engine, name: str, **options: object) -> SearchTrace:
    trace = SearchTrace()
    engine.search("retry backoff delays", [name], options=SearchOptions(**options), trace=trace)
    return trace


def test_trace_says_keyword_only_until_vectors_exist(small_engine: Engine, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "p", FILES)
    name = small_engine.add_collection(root).name
    small_engine.update([name])
    before = _traced(small_engine, name)  # nothing embedded yet: every chunk waits
    assert (before.mode, before.pending_vectors, before.stale) == ("lexical", 2, True)
    small_engine.embed([name])
    after = _traced(small_engine, name)
    assert (after.mode, after.pending_vectors, after.stale) == ("hybrid", 0, False)
    (root / "extra.py").write_text("def extra_helper():\n    return 42\n")
    small_engine.update([name])
    partly = _traced(small_engine, name)
    assert (partly.mode, partly.pending_vectors) == ("hybrid", 1)
    off = _traced(small_engine, name, vectors=False)
    assert (off.mode, off.pending_vectors) == ("lexical", 0), "vectors off: nothing is waiting for them"


def test_ai_search_says_once_on_stderr_that_results_are_keyword_only(
    daemon_home: Path, tmp_path: Path, small_models: dict[str, Path]
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    config = IndexConfig.load(daemon_home / "config" / "index.yml")
    config.set_models({"profile": "small"})
    config.save()
    proc = run_client("ai_search.py", "retry backoff delays", "--json", "--no-daemon", home=daemon_home,
                      cwd=repo, QMD_MODELS_DIR=str(MODELS_DIR))
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert isinstance(hits, list) and hits[0]["path"] == "net/retry.py"
    notes = [line for line in proc.stderr.splitlines() if "deep vectors" in line]
    assert notes == ["ai-search: results from keywords only (no deep vectors yet: 2 chunks wait for them);"
                     " this search ran without the daemon: `qmd-daemon embed` gives them deep vectors"]
    # the same line on the next call is noise to an agent reading stderr: held back for a while
    again = run_client("ai_search.py", "retry backoff delays", "--json", "--no-daemon", home=daemon_home,
                       cwd=repo, QMD_MODELS_DIR=str(MODELS_DIR))
    assert again.returncode == 0 and json.loads(again.stdout) == hits, again.stderr
    assert "deep vectors" not in again.stderr, again.stderr


def test_the_line_says_what_results_are_made_of_and_when_deep_vectors_come() -> None:
    """The wording of a daemon's answer body (the fields test_first_hour_embedding.py checks a
    real daemon sends): it said `1 chunks still wait for vectors: those found by keywords only
    for now`, whatever the static tier did and whether anything embedded them."""
    from clients._qmd_client import vectors_line

    hybrid = {"mode": "hybrid", "pending_vectors": 1, "static_rescored": True, "deep_vectors": True,
              "embedding": True, "vectors_eta_s": 250}
    kind, line = vectors_line(hybrid) or ("", "")
    assert line == ("hybrid results (keywords + deep vectors); the 1 chunk without deep vectors yet is ranked"
                    " by keywords and static vectors; the daemon is embedding them in the background"
                    " (about 4 min left)")
    many = vectors_line({**hybrid, "pending_vectors": 4948, "vectors_eta_s": 9000})
    assert many == (kind, "hybrid results (keywords + deep vectors); the 4,948 chunks without deep vectors"
                    " yet are ranked by keywords and static vectors; the daemon is embedding them in the"
                    " background (about 2.5 h left)"), "the counts change, the kind of line does not"
    idle = vectors_line({"mode": "lexical", "pending_vectors": 2, "embedding": False})
    assert idle is not None and idle[0] != kind
    assert idle[1] == ("results from keywords only (no deep vectors yet: 2 chunks wait for them); no"
                       " embedding runs for them: `qmd-daemon embed` gives them deep vectors")
    assert vectors_line({"mode": "hybrid", "pending_vectors": 0}) is None
    # hybrid by the static tier alone (no deep vector yet): not "keywords + deep vectors"
    static_only = vectors_line({"mode": "hybrid", "pending_vectors": 3, "static_rescored": True,
                                "deep_vectors": False, "embedding": True})
    assert static_only is not None and static_only[1].startswith(
        "results from keywords re-ranked by static vectors (no deep vectors yet: 3 chunks wait for them)")


def test_the_daemon_says_keyword_only_without_an_embedding_model(daemon_home: Path, tmp_path: Path) -> None:
    """No embedding model configured: lexical by choice, nothing waits, so no stderr line; the
    real daemon's /search body (what ai-search reads) carries the mode and the count."""
    repo = make_repo(tmp_path / "repo", FILES)
    config = IndexConfig.load(daemon_home / "config" / "index.yml")
    config.set_models({"embed": "off", "rerank": "off", "expand": "off"})
    config.save()
    proc = run_client("ai_search.py", "retry backoff delays", "--json", home=daemon_home, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["path"] == "net/retry.py"
    assert "wait for vectors" not in proc.stderr and "searching in-process" not in proc.stderr
    state = state_of(daemon_home)
    conn = http.client.HTTPConnection("127.0.0.1", state["port"], timeout=30)
    conn.request("POST", "/search", body=json.dumps({"query": "retry backoff", "path": str(repo)}),
                 headers={"Authorization": f"Bearer {state['token']}"})
    body = json.loads(conn.getresponse().read())
    conn.close()
    assert (body["mode"], body["pending_vectors"]) == ("lexical", 0) and body["hits"]
