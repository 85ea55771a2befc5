"""The static tier's list: lexical's candidates re-scored by the cosine of their static vectors
to the question's (models/static_table.py, store/static_vectors.py).

Why re-scoring and no new candidates: a static vector is a weighted bag of the chunk's words, so
the chunks it alone brings in were, on the broad set, more often wrong than right; re-ordering
what BM25 found by a smoothed, IDF-weighted similarity was the best fusion measured (+0.014 on
the dev queries and on broad, docs/scale.md "A table learned from the deep vectors", run 4).
A candidate is compared with the question weighted by its own collection's IDF, as it was.
The question's vector is a tokenizer call and a table lookup: no model runs on the search path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from qmd_daemon.models.static_table import StaticModel
from qmd_daemon.search.feedback import Feedback, rocchio, unit_rows
from qmd_daemon.search.fusion import RankedList
from qmd_daemon.search.vector import VECTOR_CANDIDATES
from qmd_daemon.store.protocols import StaticVectorStore
from qmd_daemon.text.code_words import code_words

if TYPE_CHECKING:
    import numpy as np


@dataclass
class StaticTier:
    """What a search needs of the tier: the model (tokenizer, rows) and the index's vectors."""

    model: StaticModel
    vectors: StaticVectorStore


def static_list(
    tier: StaticTier,
    text: str,
    candidate_ids: list[int],
    weight: float,
    feedback: Feedback | None = None,
    file_of: dict[int, int] | None = None,
) -> RankedList | None:
    """The best VECTOR_CANDIDATES of `candidate_ids` (lexical's, best first) by static cosine to
    `text`, as a list of `weight`; None when the question has no word the table knows or no
    candidate has a vector. With `feedback`, the question's vector first moves toward its first
    candidates' (search/feedback.py; `file_of`: chunk id -> file id, for feedback by file)."""
    from qmd_daemon.numeric import np  # numpy on first use (qmd_daemon/numeric.py)

    if not candidate_ids or tier.vectors.active_model() != tier.model.fingerprint:
        return None  # no static vector yet, or only another model's (the next pass replaces them)
    tokens = tier.model.tokenize([code_words(text)])[0]
    if not tokens:
        return None
    tier.model.take_saved_rows()  # the rows a terminal's `embed` distilled beside this process
    stored = tier.vectors.vectors_of(candidate_ids)
    ids = [cid for cid in candidate_ids if cid in stored]
    if not ids:
        return None
    queries: dict[int, np.ndarray] = {}  # collection id -> the question weighted by its IDF
    for collection_id in dict.fromkeys(stored[cid][0] for cid in ids):
        docs, df = tier.vectors.token_df(collection_id, tokens)
        queries[collection_id] = tier.model.pool([[tokens]], tier.model.idf(docs, df))[0]
    matrix = unit_rows(np.stack([stored[cid][1] for cid in ids]))
    if feedback is not None:
        moved = feedback.rows(matrix, [file_of.get(cid, -cid) for cid in ids] if file_of else None)
        queries = {c: rocchio(q, moved, feedback.weight) for c, q in queries.items()}
    sims = np.einsum("ij,ij->i", matrix, np.stack([queries[stored[cid][0]] for cid in ids]))
    best = np.argsort(-sims, kind="stable")[:VECTOR_CANDIDATES]
    return RankedList("static", [ids[i] for i in best], [float(sims[i]) for i in best], "cosine", weight)
