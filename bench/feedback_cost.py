"""What pseudo-relevance feedback (search/term_feedback.py) costs a search, step by step, in CPU ms
beside lexical retrieval's own, on a bench home of bench/retrieval.py: picking the feedback words
from the first hits, and the second FTS query with every word or only those whose postings over
the whole index fit a budget (FTS5 reads a term's posting list over every collection before the
collection filter). `--candidates N` also times the words matched over lexical's candidates only
(`chunks_matching`: which match, no BM25) on the first N questions.

    python bench/feedback_cost.py [--home DIR] [--queries 60] [--chunks 5] [--terms 20] [--candidates 0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.retrieval import load_set, open_engine  # noqa: E402
from qmd_daemon.search.lexical import DEFAULT_WEIGHTS, lexical_search, term_counts  # noqa: E402
from qmd_daemon.search.query import parse_query  # noqa: E402
from qmd_daemon.search.term_feedback import feedback_terms  # noqa: E402
from qmd_daemon.store.lexical_query import AnyOf  # noqa: E402

BUDGETS = (None, 50_000, 20_000, 5_000)  # postings over the whole index; None: every word


def cpu_ms(step: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    start = time.process_time()
    result = step(*args)
    return (time.process_time() - start) * 1000, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=Path.home() / ".cache/qmd-eval/home-root")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--chunks", type=int, default=5)
    parser.add_argument("--terms", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=0)
    args = parser.parse_args()
    engine = open_engine(args.home, None)
    store = engine.store
    names = list(engine.collections())
    every = engine.collection_ids(names)
    rows = load_set("broad")
    rows = rows[:: max(1, len(rows) // args.queries)][: args.queries]
    times: dict[str, list[float]] = {}
    kept_terms: dict[str, list[int]] = {}
    for n, row in enumerate(rows):
        ids = engine.collection_ids([c for c in names if c == row["repo"] or c == row["repo"] + "-root"])
        parsed = parse_query(row["query"])
        ms, hits = cpu_ms(lexical_search, store, parsed, ids)
        times.setdefault("lexical retrieval", []).append(ms)
        ms, words = cpu_ms(feedback_terms, store, parsed, hits, ids, args.chunks, args.terms)
        times.setdefault("feedback words", []).append(ms)
        if not words:
            continue
        scoped, whole = term_counts(store, words, ids), term_counts(store, words, every)
        for budget in BUDGETS:
            kept: list[str] = []
            for word in words:
                read = sum(whole[w].postings for w in kept) + whole[word].postings
                if budget is None or not kept or read <= budget:
                    kept.append(word)
            query = AnyOf(tuple(scoped[w].query for w in kept))
            label = f"second query, {'every word' if budget is None else f'postings <= {budget}'}"
            ms, _ = cpu_ms(store.fts_search, query, ids, 200, DEFAULT_WEIGHTS)
            times.setdefault(label, []).append(ms)
            kept_terms.setdefault(label, []).append(len(kept))
        if n < args.candidates:
            every_word = AnyOf(tuple(scoped[w].query for w in words))
            ms, _ = cpu_ms(store.chunks_matching, every_word, [h.chunk_id for h in hits])
            times.setdefault("every word over lexical's candidates (no BM25)", []).append(ms)
    base = statistics.median(times["lexical retrieval"])
    print(f"{len(rows)} broad questions, {args.home}, load {os.getloadavg()[0]:.1f}; "
          "CPU ms p50 (x lexical retrieval)")
    for label, values in times.items():
        terms = f", {statistics.median(kept_terms[label]):g} words" if label in kept_terms else ""
        median = statistics.median(values)
        print(f"  {label:<48} {median:7.2f}  x{median / base:.2f}{terms}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
