"""The eval's scoring rules (/work/shared/eval/README.md) and the file-level BM25 baseline."""

from __future__ import annotations

import math

import pytest

from bench.baseline_bm25 import BM25Index, tokenize, walk_files
from bench.metrics import (
    acc_at_k,
    aggregate,
    mrr_at_k,
    ndcg_at_k,
    paired_interval,
    path_matches,
    percentile,
    reduce_to_files,
    score_query,
)


def test_path_matching_rules():
    assert path_matches("aiohttp/client.py", "aiohttp/client.py")
    assert path_matches("src/aiohttp/client.py", "aiohttp/client.py")  # one ends with "/" + other
    assert path_matches("aiohttp/client.py", "src/aiohttp/client.py")
    assert path_matches("client.py", "aiohttp/client.py")
    assert not path_matches("aiohttp/web_client.py", "client.py")  # suffix, but not at a "/"
    assert not path_matches("aiohttp/client.py", "aiohttp/client.pyi")
    assert not path_matches("aiohttp/client.py", "other/client.py")


def test_reduce_to_files_keeps_first_occurrence():
    hits = ["a.py", "b.py", "a.py", "c.py", "b.py", "d.py"]
    assert reduce_to_files(hits) == ["a.py", "b.py", "c.py", "d.py"]
    assert reduce_to_files([]) == []


def test_ndcg_binary_with_relevant_and_secondary():
    gold = ["x/rel.py", "x/sec.py"]
    assert ndcg_at_k(["x/rel.py", "x/sec.py", "x/o.py"], gold) == pytest.approx(1.0)
    assert ndcg_at_k(["x/sec.py", "x/rel.py"], gold) == pytest.approx(1.0)  # binary: order among gold free
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at_k(["x/o.py", "x/rel.py"], gold) == pytest.approx((1 / math.log2(3)) / ideal)
    assert ndcg_at_k(["x/o.py", "x/p.py", "x/sec.py"], gold) == pytest.approx(0.5 / ideal)
    assert ndcg_at_k(["x/o.py"], gold) == 0.0
    # a single gold path at rank 3
    assert ndcg_at_k(["a", "b", "x/rel.py"], ["x/rel.py"]) == pytest.approx(0.5)
    # beyond rank 10 does not count
    assert ndcg_at_k([f"f{i}" for i in range(10)] + ["x/rel.py"], ["x/rel.py"]) == 0.0


def test_ndcg_ideal_is_capped_at_ten_and_gold_credited_once():
    gold = [f"g{i}.py" for i in range(12)]
    assert ndcg_at_k(gold[:10], gold) == pytest.approx(1.0)
    # two ranked files matching the same gold path (suffix rule) credit it once
    assert ndcg_at_k(["a/x.py", "b/a/x.py"], ["a/x.py"]) == pytest.approx(1.0)
    assert ndcg_at_k(["a/x.py", "b/a/x.py"], ["a/x.py", "c.py"]) <= 1.0


def test_acc_at_k_needs_every_relevant_path():
    ranked = ["o.py", "r1.py", "o2.py", "o3.py", "o4.py", "r2.py"]
    assert acc_at_k(ranked, ["r1.py"], 1) == 0.0
    assert acc_at_k(ranked, ["r1.py"], 2) == 1.0
    assert acc_at_k(ranked, ["r1.py", "r2.py"], 5) == 0.0
    assert acc_at_k(ranked, ["r1.py", "r2.py"], 10) == 1.0
    assert acc_at_k(["pkg/r1.py"], ["r1.py"], 1) == 1.0


def test_mrr_first_relevant_rank():
    assert mrr_at_k(["a", "b", "r"], ["r"]) == pytest.approx(1 / 3)
    assert mrr_at_k(["r2", "a", "r1"], ["r1", "r2"]) == 1.0
    assert mrr_at_k([f"f{i}" for i in range(10)] + ["r"], ["r"]) == 0.0


def test_score_query_reduces_then_scores_top_10():
    # chunk hits: the same file repeated must not push the answer out of the top 10
    hits = ["a.py"] * 5 + [f"f{i}.py" for i in range(8)] + ["pkg/r.py"]  # r: hit 14, file 10
    s = score_query(hits, ["pkg/r.py"], ["pkg/s.py"])
    assert s["acc@10"] == 1.0 and s["acc@5"] == 0.0
    assert s["mrr@10"] == pytest.approx(0.1)
    s = score_query(["a.py"] + [f"f{i}.py" for i in range(9)] + ["pkg/r.py"], ["pkg/r.py"])
    assert s["acc@10"] == 0.0 and s["mrr@10"] == 0.0 and s["ndcg@10"] == 0.0  # file 11
    hits = ["a.py", "a.py", "pkg/r.py"]
    s = score_query(hits, ["pkg/r.py"], ["pkg/s.py"])
    assert s["acc@1"] == 0.0 and s["acc@5"] == 1.0 and s["mrr@10"] == 0.5
    assert s["ndcg@10"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))


def test_aggregate_and_percentile():
    rows = [{"ndcg@10": 1.0, "acc@1": 1.0, "acc@5": 1.0, "acc@10": 1.0, "mrr@10": 1.0, "ms": 10.0},
            {"ndcg@10": 0.0, "acc@1": 0.0, "acc@5": 1.0, "acc@10": 1.0, "mrr@10": 0.5, "ms": 30.0}]
    a = aggregate(rows)
    assert a["ndcg@10"] == 0.5 and a["acc@5"] == 1.0 and a["mrr@10"] == 0.75 and a["n"] == 2
    assert a["p50_ms"] == 20.0
    assert percentile([1, 2, 3, 4, 5], 95) == pytest.approx(4.8)
    assert percentile([], 50) == 0.0


def test_tokenize_splits_camel_snake_and_lowercases():
    assert tokenize("HTTPServer ws_connect parseJSON2 foo.bar") == [
        "http", "server", "ws", "connect", "parse", "json", "2", "foo", "bar"]
    assert tokenize("ClientSession") == ["client", "session"]
    assert tokenize("") == []


CORPUS = {
    "pkg/client.py": (
        "class ClientSession:\n    def request(self, method, url):\n"
        "        return self._connector.connect(url)\n"
    ),
    "pkg/connector.py": (
        "class TCPConnector:\n    '''Connection pooling for TCP.'''\n"
        "    def connect(self, url): pool = []\n"
    ),
    "pkg/web_ws.py": "class WebSocketResponse:\n    async def receive(self): ...\n",
    "docs/index.md": "# Guide\nThe client session is documented here.\n",
    "pkg/cookies.py": "class CookieJar:\n    def update_cookies(self, cookies): ...\n",
}


def test_bm25_finds_the_known_answer():
    idx = BM25Index(CORPUS)
    assert idx.search("TCP connection pooling")[0] == "pkg/connector.py"
    assert idx.search("WebSocket response")[0] == "pkg/web_ws.py"
    assert idx.search("cookie jar")[0] == "pkg/cookies.py"
    assert idx.search("connector")[0] == "pkg/connector.py"  # the path is part of the document
    assert idx.search("ClientSession request")[0] == "pkg/client.py"
    assert idx.search("nothing matches zzz") == []
    assert len(idx.search("class", limit=2)) == 2


def test_bm25_scores_follow_the_formula():
    docs = {"a": "x y", "b": "y y y z", "c": "z"}
    idx = BM25Index(docs, k1=1.2, b=0.75)
    # path is part of the document: "a x y" (3 tokens), "b y y y z" (5), "c z" (2)
    lengths = {"a": 3, "b": 5, "c": 2}
    avgdl = sum(lengths.values()) / 3
    idf_y = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def w(tf, dl):
        return tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    scores = dict(zip(idx.paths, idx.scores("y"), strict=True))
    assert scores["a"] == pytest.approx(idf_y * w(1, 3))
    assert scores["b"] == pytest.approx(idf_y * w(3, 5))
    assert scores["c"] == 0.0
    # repeated query words count once
    assert list(idx.scores("y y y")) == list(idx.scores("y"))


def test_walk_files_applies_mask_and_excludes(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("alpha")
    (tmp_path / "pkg" / "b.bin").write_text("nope")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "x.js").write_text("nope")
    (tmp_path / "z.min.js").write_text("nope")
    got = walk_files(tmp_path, {".py", ".js"}, ("node_modules/", "*.min.js"))
    assert got == {"pkg/a.py": "alpha"}


def test_paired_interval_says_a_question_s_worth_is_within_noise() -> None:
    # 20 questions, one of them up by 0.5: a mean of +0.025, but resampling leaves it out of many
    # draws, so the interval reaches 0 and the gap is not a change.
    first = [0.5] * 20
    one_up = [1.0] + [0.5] * 19
    mean, lo, hi = paired_interval(first, one_up)
    assert mean == pytest.approx(0.025)
    assert lo == 0.0 and hi > 0.025
    # every question up (by different amounts): the whole interval is above 0, and it holds the mean
    all_up = [0.5 + 0.01 * (i + 1) for i in range(20)]
    mean, lo, hi = paired_interval(first, all_up)
    assert 0 < lo < mean < hi
    assert paired_interval(first, all_up) == (mean, lo, hi)  # seeded: the same table every run
    assert paired_interval(first, first) == (0.0, 0.0, 0.0)
    assert paired_interval([], []) == (0.0, 0.0, 0.0)


def test_paired_interval_refuses_unpaired_lists() -> None:
    with pytest.raises(ValueError, match="different numbers"):
        paired_interval([0.5, 0.5], [0.5])
