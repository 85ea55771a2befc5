"""Incremental update of one collection, in one transaction.

A file whose size and mtime are unchanged is not read; a changed file is hashed and re-chunked
only when its bytes changed; only chunks whose content changed are rewritten. A crash or kill
mid-update rolls the transaction back, so the previous index stays searchable.
"""

from __future__ import annotations

import hashlib
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from qmd_daemon.config import CollectionConfig
from qmd_daemon.errors import UsageError
from qmd_daemon.ingest.chunking import CHUNKER_VERSION, chunk_text
from qmd_daemon.ingest.languages import kind_of, language_of
from qmd_daemon.ingest.links import find_links
from qmd_daemon.ingest.scan import ScannedFile, scan
from qmd_daemon.settings import Settings
from qmd_daemon.store.index_store import IndexStore

_BINARY_SNIFF_BYTES = 8192


@dataclass
class UpdateReport:
    collection: str
    files: int = 0
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_root(collection: CollectionConfig) -> Path:
    root = collection.path
    if not root.exists():
        raise UsageError(f"collection '{collection.name}': path {root} does not exist")
    if not root.is_dir():
        raise UsageError(f"collection '{collection.name}': path {root} is a file, not a folder")
    return root


def _read(root: Path, scanned: ScannedFile) -> bytes | str:
    """The file's bytes, or the reason it is skipped."""
    try:
        data = (root / scanned.path).read_bytes()
    except OSError:
        return "unreadable"
    if b"\0" in data[:_BINARY_SNIFF_BYTES]:
        return "binary"
    return data


def update_collection(
    store: IndexStore, collection: CollectionConfig, settings: Settings, *, progress: bool | None = None
) -> UpdateReport:
    started = time.perf_counter()
    root = _check_root(collection)
    result = scan(
        root,
        mask=collection.pattern,
        ignore=collection.ignore,
        excludes=settings.excludes,
        max_file_bytes=settings.max_file_bytes,
    )
    report = UpdateReport(collection=collection.name)
    skipped = result.skipped
    show = sys.stderr.isatty() if progress is None else progress
    with store.transaction():
        collection_id = store.ensure_collection(collection.name, root.resolve())
        states = store.file_states(collection_id)
        rechunk = store.chunker_version(collection_id) != CHUNKER_VERSION
        seen: set[str] = set()
        for scanned in tqdm(
            result.files, desc=collection.name, unit="file", disable=not show, file=sys.stderr, leave=False
        ):
            state = states.get(scanned.path)
            same_stat = state and state.size == scanned.size and state.mtime_ns == scanned.mtime_ns
            if same_stat and not rechunk:
                seen.add(scanned.path)
                report.unchanged += 1
                continue
            data = _read(root, scanned)
            if isinstance(data, str):
                skipped[data] += 1
                continue
            seen.add(scanned.path)
            digest = hashlib.sha256(data).hexdigest()
            if state and state.hash == digest and not rechunk:
                store.touch_file(state.id, scanned.size, scanned.mtime_ns)
                report.unchanged += 1
                continue
            text = data.decode("utf-8", errors="replace")
            language = language_of(scanned.path)
            chunks = chunk_text(scanned.path, text, language)
            added, removed = store.write_file(
                collection_id,
                scanned.path,
                size=scanned.size,
                mtime_ns=scanned.mtime_ns,
                content_hash=digest,
                language=language,
                kind=kind_of(language),
                line_count=text.count("\n") + 1,
                chunks=chunks,
            )
            report.chunks_added += added
            report.chunks_removed += removed
            if state:
                report.changed += 1
            else:
                report.added += 1
        gone = [state.id for path, state in states.items() if path not in seen]
        store.delete_files(gone)
        report.removed = len(gone)
        if report.touched:
            store.replace_links(
                collection_id,
                find_links(
                    store.doc_chunks(collection_id),
                    store.code_files(collection_id),
                    store.definition_files(collection_id),
                ),
            )
        store.mark_updated(collection_id, CHUNKER_VERSION)
    report.files = len(seen)
    report.skipped = dict(skipped)
    report.seconds = round(time.perf_counter() - started, 3)
    return report
