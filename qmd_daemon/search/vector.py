"""Vector retrieval: the question (and its vec/hyde rewrites) embedded, nearest chunks within
the searched collections (store/vectors.py: binary codes, then rescoring; docs/scale.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qmd_daemon.models.embedder import Embedder
from qmd_daemon.search.feedback import Feedback, rocchio, unit_rows
from qmd_daemon.search.path_filter import PathScope
from qmd_daemon.store.protocols import VectorStore

VECTOR_CANDIDATES = 100


@dataclass
class VectorHit:
    chunk_id: int
    similarity: float


def vector_search(
    vectors: VectorStore,
    embedder: Embedder,
    text: str,
    collection_ids: list[int],
    k: int = VECTOR_CANDIDATES,
    within: PathScope | None = None,
    feedback: Feedback | None = None,
    lexical_ids: Sequence[int] = (),
) -> list[VectorHit]:
    """The k chunks nearest `text`'s vector (of `within`'s allowed files only, when given); with
    `feedback`, nearest that vector moved toward the vectors of `lexical_ids`' first chunks
    (lexical's, best first; search/feedback.py), or, `feedback.rescore`, the k of `lexical_ids`
    nearest it (as the static list does)."""
    active = vectors.active_model()
    if active is None or active[0] != embedder.fingerprint or not text.strip():
        return []
    query = embedder.embed_query(text)
    if feedback is not None and lexical_ids:
        from qmd_daemon.numeric import np

        ids = list(lexical_ids if feedback.rescore else lexical_ids[: feedback.k])
        stored = vectors.vectors_of(ids)
        ids = [c for c in ids if c in stored]
        found = np.asarray([stored[c] for c in ids], dtype=np.float32)
        rows = unit_rows(found.reshape(len(ids), len(query)))
        moved = rocchio(np.asarray(query, dtype=np.float32), feedback.rows(rows), feedback.weight)
        if feedback.rescore:  # lexical's candidates (already within the allowed files)
            sims = rows @ moved
            return [VectorHit(ids[i], float(sims[i])) for i in np.argsort(-sims, kind="stable")[:k]]
        query = moved.tolist()
    if within is None:
        return [VectorHit(c, s) for c, s in vectors.search(query, collection_ids, k)]
    return [VectorHit(c, s) for c, s in within.nearest(vectors, query, collection_ids, k)]
