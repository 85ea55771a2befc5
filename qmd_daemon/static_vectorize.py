"""The static pass: chunks without a static vector (of their current text) get one.

Why a pass of its own before the deep one: it pools distilled token rows (models/static_table.py)
at ~1,000 chunks/s where the deep model does ~9, so search has a vector for every chunk minutes
after install. Resumable like vectorize.py (pending is "chunks without a current static vector"),
committed a batch at a time under the writer lock, one run at a time (a lock file). The token rows
a batch needs are distilled first (lazily: only tokens some chunk uses), and the batch's own token
counts join the index's before its IDF is taken, so the first batch of a new index is weighted by
a thousand chunks' statistics, not none.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qmd_daemon.locks import LockBusy, held_or_busy, holder_pid
from qmd_daemon.models.static_table import StaticModel
from qmd_daemon.progress import progress_bar, shown
from qmd_daemon.store.protocols import ChunkStore, StaticVectorStore
from qmd_daemon.text.code_words import chunk_fields

if TYPE_CHECKING:
    import numpy as np

BATCH = 1000


class StaticBusy(LockBusy):
    """Another process is running the static pass right now; it pools every pending chunk."""


@dataclass
class StaticReport:
    embedded: int = 0
    distilled: int = 0  # token rows distilled by this run
    distill_seconds: float = 0.0  # of `seconds`: once per token, ever (Auto splits the two)
    pending: int = 0
    seconds: float = 0.0
    model: str = ""
    busy: bool = False  # another process was running the pass: it does the work
    held_by: int | None = None  # that process's pid, when busy (the daemon owes the pass: jobs.py)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def static_pending(
    store: ChunkStore,
    vectors: StaticVectorStore,
    model: StaticModel,
    collection_ids: list[int] | None,
    lock_path: Path,
    writing: Callable[[], AbstractContextManager[None]],
    *,
    progress: bool | None = None,
    yield_to: Callable[[], bool] | None = None,
) -> StaticReport:
    """Pool a static vector for every pending chunk of the collections; `yield_to` as in
    vectorize.embed_pending. A second run while one holds the lock returns `busy`."""
    started = time.perf_counter()
    report = StaticReport(model=model.fingerprint)
    try:
        with held_or_busy(lock_path, StaticBusy("another static pass is running on this index")):
            _run(store, vectors, model, collection_ids, writing, report, progress, yield_to)
    except StaticBusy:
        report.busy, report.held_by = True, holder_pid(lock_path)
    covered, chunks = vectors.coverage(collection_ids)  # a count, not the pending rows themselves
    report.pending = chunks - covered
    report.seconds = round(time.perf_counter() - started, 3)
    report.distill_seconds = round(report.distill_seconds, 3)
    return report


def _run(store: ChunkStore, vectors: StaticVectorStore, model: StaticModel, collection_ids: list[int] | None,
         writing: Callable[[], AbstractContextManager[None]], report: StaticReport,
         progress: bool | None, yield_to: Callable[[], bool] | None) -> None:
    with writing():
        vectors.ensure(model.fingerprint)
        todo = vectors.pending(collection_ids)
    show = shown(progress)
    bar = progress_bar("static vectors", "chunk", show, total=len(todo))
    try:
        for start in range(0, len(todo), BATCH):
            batch = todo[start : start + BATCH]
            rows = store.chunks_by_ids([chunk_id for chunk_id, _c, _h in batch])
            present = [(cid, col) for cid, col, _h in batch if cid in rows]
            fields = [chunk_fields(rows[cid].path, rows[cid].symbols, rows[cid].heading,
                                   rows[cid].signature, rows[cid].text) for cid, _col in present]
            flat = model.tokenize([text for three in fields for text in three])
            tokens = [flat[3 * i : 3 * i + 3] for i in range(len(present))]
            distinct = [set(chain.from_iterable(three)) for three in tokens]
            distilling = time.perf_counter()
            report.distilled += model.distil(sorted(set().union(*distinct)), progress=show)
            report.distill_seconds += time.perf_counter() - distilling
            out: list[tuple[int, int, str, np.ndarray, set[int]]] = []
            for collection_id in dict.fromkeys(col for _cid, col in present):
                mine = [i for i, (_cid, col) in enumerate(present) if col == collection_id]
                pooled = model.pool([tokens[i] for i in mine], _idf(vectors, model, collection_id,
                                                                    [distinct[i] for i in mine]))
                out += [(present[i][0], collection_id, rows[present[i][0]].hash, pooled[j], distinct[i])
                        for j, i in enumerate(mine)]
            with writing():
                report.embedded += vectors.put(out)
            bar.update(len(batch))
            if yield_to is not None and yield_to():
                break
    finally:
        bar.close()
        model.save_rows()


def _idf(
    vectors: StaticVectorStore, model: StaticModel, collection_id: int, batch: list[set[int]]
) -> np.ndarray:
    """IDF over the collection's chunks pooled so far and this batch's."""
    docs, df = vectors.token_df(collection_id, set().union(*batch))
    for chunk_tokens in batch:
        for token in chunk_tokens:
            df[token] = df.get(token, 0) + 1
    return model.idf(docs + len(batch), df)
