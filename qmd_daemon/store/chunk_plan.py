"""Which stored chunks of a file a new version keeps, re-derives, adds and drops: one rule for
every backend, so an edit costs the same re-embedding wherever the index lives."""

from __future__ import annotations

from dataclasses import dataclass, field

from qmd_daemon.text.chunk_model import Chunk

# content hash -> (chunk id, (symbols, signature, heading)) of the stored chunks, in file order
StoredChunks = dict[str, list[tuple[int, tuple[str, str, str]]]]


@dataclass
class ChunkPlan:
    moved: list[tuple[int, int, Chunk]] = field(default_factory=list)  # (seq, kept id, chunk)
    rederived: list[tuple[int, Chunk]] = field(default_factory=list)  # (kept id, chunk): new context
    fresh: list[tuple[int, Chunk]] = field(default_factory=list)  # (seq, chunk) to insert
    stale: list[int] = field(default_factory=list)  # stored ids no chunk kept


def plan_chunks(stored: StoredChunks, chunks: list[Chunk], rederive: bool) -> ChunkPlan:
    """Only chunks whose content changed are rewritten: a chunk whose text a stored one has keeps
    that one's id (and vector). It is re-derived (symbols, signature, heading, definitions, its
    keyword row) with `rederive` (the index format changed: a new chunker or tokenizer rule must
    reach every chunk) or when that context changed (the lines of a function that was renamed)."""
    plan = ChunkPlan()
    for seq, chunk in enumerate(chunks):
        reusable = stored.get(chunk.content_hash)
        if not reusable:
            plan.fresh.append((seq, chunk))
            continue
        chunk_id, context = reusable.pop(0)
        plan.moved.append((seq, chunk_id, chunk))
        if rederive or context != (" ".join(chunk.symbols), chunk.signature, chunk.heading):
            plan.rederived.append((chunk_id, chunk))
    plan.stale = [chunk_id for ids in stored.values() for chunk_id, _ in ids]
    return plan
