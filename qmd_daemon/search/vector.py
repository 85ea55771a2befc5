"""Vector retrieval: the question (and its vec/hyde rewrites) embedded, nearest chunks within
the searched collections (store/vectors.py: binary codes, then rescoring; docs/scale.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qmd_daemon.models.embedder import Embedder
from qmd_daemon.search.feedback import Feedback, rocchio, unit_rows
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
    feedback: Feedback | None = None,
    lexical_ids: Sequence[int] = (),
) -> list[VectorHit]:
    """The k chunks nearest `text`'s vector; with `feedback`, nearest that vector moved toward
    the vectors of `lexical_ids`' first chunks (lexical's, best first; search/feedback.py)."""
    active = vectors.active_model()
    if active is None or active[0] != embedder.fingerprint or not text.strip():
        return []
    query = embedder.embed_query(text)
    if feedback is not None and lexical_ids:
        query = _moved(vectors, query, feedback, lexical_ids)
    return [VectorHit(c, s) for c, s in vectors.search(query, collection_ids, k)]


def _moved(
    vectors: VectorStore, query: Sequence[float], feedback: Feedback, lexical_ids: Sequence[int]
) -> list[float]:
    """Rocchio's query over the stored vectors of lexical's first feedback.k chunks that have one."""
    from qmd_daemon.numeric import np

    first = list(lexical_ids[: feedback.k])
    stored = vectors.vectors_of(first)
    found = [stored[c] for c in first if c in stored]
    rows = unit_rows(np.asarray(found, dtype=np.float32).reshape(len(found), len(query)))
    return rocchio(np.asarray(query, dtype=np.float32), rows, feedback.weight).tolist()
