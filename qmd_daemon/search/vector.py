"""Vector retrieval: the question (and its vec/hyde rewrites) embedded, nearest chunks within
the searched collections (store/vectors.py: binary codes, then rescoring; docs/scale.md)."""

from __future__ import annotations

from dataclasses import dataclass

from qmd_daemon.models.embedder import Embedder
from qmd_daemon.store.protocols import VectorStore

VECTOR_CANDIDATES = 100


@dataclass
class VectorHit:
    chunk_id: int
    similarity: float


def vector_search(
    vectors: VectorStore, embedder: Embedder, text: str, collection_ids: list[int], k: int = VECTOR_CANDIDATES
) -> list[VectorHit]:
    active = vectors.active_model()
    if active is None or active[0] != embedder.fingerprint or not text.strip():
        return []
    return [VectorHit(c, s) for c, s in vectors.search(embedder.embed_query(text), collection_ids, k)]
