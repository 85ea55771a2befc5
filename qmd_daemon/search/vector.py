"""Vector retrieval: the question (and its vec/hyde rewrites) embedded, nearest chunks within
the searched collections (store/vectors.py: binary codes, then rescoring; docs/scale.md)."""

from __future__ import annotations

from dataclasses import dataclass

from qmd_daemon.models.embedder import Embedder
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
) -> list[VectorHit]:
    """The k chunks nearest TEXT (of WITHIN's allowed files only, when given)."""
    active = vectors.active_model()
    if active is None or active[0] != embedder.fingerprint or not text.strip():
        return []
    query = embedder.embed_query(text)
    if within is None:
        return [VectorHit(c, s) for c, s in vectors.search(query, collection_ids, k)]
    return [VectorHit(c, s) for c, s in within.nearest(vectors, query, collection_ids, k)]
