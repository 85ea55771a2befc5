"""The embedding pass: chunks without a vector get one.

Resumable by construction: vectors are committed batch by batch, and what is pending is simply
"chunks with no vector", so an interrupted run continues where it stopped. A lock file keeps two
runs (two terminals, the daemon and a CLI) from embedding the same chunks twice; each batch's
write takes the index's writer lock (`writing`), so an update never waits on a whole run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from qmd_daemon.locks import LockBusy, held_or_busy
from qmd_daemon.models.abort import Aborted
from qmd_daemon.models.embedder import Embedder
from qmd_daemon.progress import progress_bar
from qmd_daemon.store.pending_order import EmbedPriority
from qmd_daemon.store.protocols import ChunkStore, VectorStore
from qmd_daemon.text.chunk_model import embedding_text

BATCH = 16
# Batches embedded between two reads of the pending order: ~7 s of MiniLM here, and the read costs
# ~45 ms at 140k pending chunks (bench/embed_priority.py).
WINDOW = 4 * BATCH


@dataclass
class EmbedReport:
    embedded: int = 0
    copied: int = 0
    pending: int = 0
    reset: bool = False
    seconds: float = 0.0
    model: str = ""
    static: dict[str, Any] | None = None  # the static pass run first (static_vectorize.StaticReport)
    deep_off: str | None = None  # why the deep pass did not run (models: {deep: off})
    aborted: int = 0  # batches stopped mid-decode for other work (models/abort.py): one decode lost

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EmbedHint:
    """What to embed first, by name: `current`, the collection of the most recent request;
    `returned`, collection -> path -> how often searches returned the file (daemon/hit_counts.py)."""

    current: str | None = None
    returned: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


class EmbedBusy(LockBusy):
    """Another process is embedding right now. `static`: the static pass's report when one ran
    before the deep pass was refused (Engine.embed), so the caller still knows what it did."""

    static: dict[str, Any] | None = None


def embed_lock(path: Path) -> AbstractContextManager[None]:
    """Held for a whole embedding run; a second run is refused (EmbedBusy), not queued: the first
    one embeds every pending chunk anyway."""
    return held_or_busy(path, EmbedBusy("another `embed` is running on this index; it will finish the work"))


def embed_pending(
    store: ChunkStore,
    vectors: VectorStore,
    embedder: Embedder,
    collection_ids: list[int] | None,
    lock_path: Path,
    writing: Callable[[], AbstractContextManager[None]],
    *,
    progress: bool | None = None,
    limit: int | None = None,
    yield_to: Callable[[], bool] | None = None,
    priority: Callable[[], EmbedPriority] | None = None,
) -> EmbedReport:
    """`yield_to`: asked after each batch; True stops the run there (what is left stays pending),
    so the daemon's refresh of a file just edited does not wait for a whole repository's vectors.
    An embedder with an abort flag (Embedder.twin) may stop inside a batch: the run stops there,
    the chunks embedded before the stopped decode stored, the rest pending for the next run.
    `priority`: asked before each window of WINDOW chunks, so a file edited or a
    repository searched while a long run goes on is embedded next (store/pending_order.py).
    `limit`: at most this many pending chunks are taken in this run."""
    started = time.perf_counter()
    report = EmbedReport(model=embedder.fingerprint)
    with embed_lock(lock_path):
        if embedder.dim == 0:
            embedder.embed_query("dimension probe")
        with writing():
            report.reset = vectors.ensure(embedder.fingerprint, embedder.dim)
        left = vectors.pending_count(collection_ids)
        total = left if limit is None else min(left, limit)
        bar = progress_bar("embedding", "chunk", progress, total=total)
        taken = 0
        # (chunk id, hash) of the last window: each got its vector or changed since, so one still
        # pending unchanged would be taken again and again; the run stops when only such are left
        last: set[tuple[int, str]] = set()
        try:
            while limit is None or taken < limit:
                size = WINDOW if limit is None else min(WINDOW, limit - taken)
                order = priority() if priority is not None else None
                with writing():  # each write waits its turn; the model runs outside, updates go between
                    found = vectors.pending(collection_ids, size, order)
                    window = [p for p in found if (p[0], p[2]) not in last]
                    todo = vectors.copy_identical(window)
                if not window:
                    break
                last = {(chunk_id, content_hash) for chunk_id, _c, content_hash in window}
                taken += len(window)
                report.copied += len(window) - len(todo)
                bar.update(len(window) - len(todo))
                if not _embed_batches(store, vectors, embedder, todo, writing, report, bar, yield_to):
                    break
        finally:
            bar.close()
    report.pending = vectors.pending_count(collection_ids)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _embed_batches(
    store: ChunkStore,
    vectors: VectorStore,
    embedder: Embedder,
    todo: list[tuple[int, int, str]],
    writing: Callable[[], AbstractContextManager[None]],
    report: EmbedReport,
    bar: tqdm[Any],
    yield_to: Callable[[], bool] | None,
) -> bool:
    """Embed `todo` BATCH chunks at a time; False when `yield_to` asked the run to stop, or the
    embedder's abort flag stopped a batch (what it embedded before is written)."""
    for start in range(0, len(todo), BATCH):
        batch = todo[start : start + BATCH]
        rows = store.chunks_by_ids([chunk_id for chunk_id, _c, _h in batch])
        present = [(cid, col) for cid, col, _h in batch if cid in rows]
        texts = [
            embedding_text(rows[cid].path, rows[cid].heading, rows[cid].signature, rows[cid].text)
            for cid, _col in present
        ]
        try:
            vecs = embedder.embed_documents(texts)
        except Aborted as exc:  # the chunks embedded before the stopped decode are kept
            report.aborted += 1
            vecs, present = exc.done, present[: len(exc.done)]
        # the hash of the text embedded: put skips a chunk replaced since (its id reused)
        embedded = zip(present, vecs, strict=True)
        rows_out: list[tuple[int, int, str, Sequence[float]]] = [
            (cid, col, rows[cid].hash, v) for (cid, col), v in embedded
        ]
        if rows_out:
            with writing():
                report.embedded += vectors.put(rows_out)
        bar.update(len(rows_out) if len(vecs) < len(texts) else len(batch))
        if len(vecs) < len(texts) or (yield_to is not None and yield_to()):
            return False
    return True
