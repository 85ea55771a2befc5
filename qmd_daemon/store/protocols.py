"""What the layers above store/ may ask of an index, as typed Protocols, so the engine, ingest,
vectorize, search and the front ends run on any backend (SQLite here, PostgreSQL beside it) and
none of them sees a driver, a connection or SQL. The records a store returns are defined here too:
every backend returns the same ones.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from qmd_daemon.store.lexical_query import LexicalQuery
from qmd_daemon.store.pending_order import EmbedPriority

if TYPE_CHECKING:
    import numpy as np
from qmd_daemon.text.chunk_model import Chunk


class FileState(NamedTuple):
    """A file as the index holds it. A tuple, not a dataclass: an update builds one per file of
    the collection before its walk (59k a no-change update), at a third of the cost."""

    id: int
    size: int
    mtime_ns: int
    hash: str


@dataclass(frozen=True)
class ChunkRow:
    id: int
    file_id: int
    collection: str
    path: str
    kind: str
    language: str | None
    start_line: int
    end_line: int
    text: str
    symbols: str
    signature: str
    heading: str
    hash: str


class ChunkStore(Protocol):
    """Collections, files, chunks, definitions, links and keyword search over them.

    Writes happen inside `transaction()`, one per collection update: all of it lands or none.
    """

    supports_vectors: bool  # whether this index can hold vectors (SQLite: sqlite-vec loaded)
    # Values derived from the data that are costly to recompute, each kept with the data_state()
    # it was computed at (document frequencies, pending-vector counts, vector codes).
    derived: dict[str, tuple[Any, Any]]

    def data_state(self) -> Any:
        """A value that changes whenever the data may have (any writer's commit)."""
        ...

    def transaction(self) -> AbstractContextManager[None]: ...

    def close(self) -> None: ...

    # -- collections
    def ensure_collection(self, name: str, root: Path) -> int: ...

    def collection_id(self, name: str) -> int | None: ...

    def remove_collection(self, name: str) -> None: ...

    def mark_updated(self, collection_id: int, index_format: str) -> None: ...

    def merge_step(self) -> bool:
        """One bounded step of the index's own upkeep (SQLite: FTS5's segments merged), inside a
        transaction; True when it did work, so more may be left. The daemon runs it while idle."""
        ...

    def index_format(self, collection_id: int) -> str: ...

    def collection_stats(self) -> list[dict[str, Any]]: ...

    # -- files and chunks
    def file_states(self, collection_id: int) -> dict[str, FileState]: ...

    def touch_file(self, file_id: int, size: int, mtime_ns: int) -> None: ...

    def delete_files(self, file_ids: Iterable[int]) -> None: ...

    def write_file(
        self,
        collection_id: int,
        path: str,
        *,
        size: int,
        mtime_ns: int,
        content_hash: str,
        language: str | None,
        kind: str,
        line_count: int,
        chunks: list[Chunk],
        rederive: bool = False,
    ) -> tuple[int, int]: ...

    def chunk_count(self, collection_id: int) -> int: ...

    def chunks_in(self, collection_ids: list[int]) -> int:
        """Chunks of the collections (a search's scope)."""
        ...

    def indexed_paths(self, collection_id: int) -> list[str]: ...

    def file_text(self, collection_id: int, path: str) -> str | None: ...

    # -- links between docs and code
    def replace_links(
        self, collection_id: int, links: list[tuple[int, int, str]], doc_chunk_ids: list[int] | None = None
    ) -> None: ...

    def links_of(self, collection_id: int) -> set[tuple[int, int, str]]:
        """Every (doc chunk, code file, cited text) link: an inspection API, for tests; no search reads it."""
        ...

    def doc_chunks(self, collection_id: int) -> list[tuple[int, str]]: ...

    def doc_chunks_of_files(self, collection_id: int, paths: list[str]) -> list[tuple[int, str]]: ...

    def doc_chunks_citing(self, collection_id: int, words: list[str]) -> list[tuple[int, str]]: ...

    def code_files(self, collection_id: int) -> dict[str, int]: ...

    def defined_names(self, collection_id: int, path: str) -> set[str]: ...

    def definition_files(self, collection_id: int, names: set[str] | None = None) -> dict[str, set[int]]: ...

    def related_paths(self, file_ids: list[int]) -> dict[int, list[str]]:
        """File id -> the code files its doc chunks cite, or the docs that cite it, each once, in
        path order (compared as bytes): a hit shows the first few (search/results.py)."""
        ...

    # -- reads for search
    def fts_search(
        self,
        query: LexicalQuery,
        collection_ids: list[int],
        limit: int,
        weights: tuple[float, float, float],
        file_ids: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk id, BM25, larger is better) best first; `weights`: path, symbols, body;
        `file_ids`: only chunks of these files (a --path filter), None: all. Raises
        errors.QueryRejected for a query the backend cannot run."""
        ...

    def fts_count(self, query: LexicalQuery, collection_ids: list[int]) -> int: ...

    def word_counts(self, words: list[str], collection_ids: list[int]) -> dict[str, int]:
        """fts_count(Word(word)) of each word, batched (0 for a word the backend rejects)."""
        ...

    def chunks_by_ids(self, chunk_ids: list[int]) -> dict[int, ChunkRow]: ...

    def chunks_defining(self, names: list[str], collection_ids: list[int]) -> list[tuple[int, str, str]]:
        """(chunk id, name, kind) of each definition of any case of one of `names`, ordered by
        chunk id, line, name, kind (names and kinds compared as bytes): the search takes the
        first case found, so every backend answers in this order."""
        ...

    def definition_counts(self, names: list[str], collection_ids: list[int]) -> dict[str, int]:
        """Each name as defined (any case of one of `names`) -> the chunks of the collections that
        define it: what chunks_defining would return, counted on the index."""
        ...

    def definitions_in(self, chunk_ids: list[int]) -> dict[int, list[tuple[str, int]]]:
        """Chunk id -> (name, line) of each definition the chunk holds, in line order (the line
        of its name, 1-based: where a hit's snippet starts, search/snippets.py); on one line, by
        name, then kind (as chunks_defining)."""
        ...

    def signature_outline(self, file_ids: list[int]) -> dict[int, list[tuple[int, str]]]:
        """File id -> (chunk id, signature) of each chunk, in line order."""
        ...

    def chunks_matching(self, query: LexicalQuery, chunk_ids: list[int]) -> set[int]:
        """The chunks among chunk_ids that match the query (QueryRejected if it cannot run)."""
        ...

    def last_lines(self, file_ids: list[int]) -> dict[int, int]: ...

    def chunks_of_files_named(self, stems: list[str], collection_ids: list[int]) -> list[int]:
        """The first chunk (lowest id) of each of the first 50 files, by file id, of the
        collections that have a stem (store/file_stems.py) among `stems` (lowercase)."""
        ...

    def file_paths(self, collection_ids: list[int]) -> list[tuple[int, str]]:
        """(file id, path relative to its collection root) of every file of the collections."""
        ...

    def chunks_of_files(self, file_ids: list[int], limit: int) -> list[int]:
        """Ids of the chunks of these files, at most `limit`."""
        ...

    def language_counts(self, collection_ids: list[int], limit: int = 8) -> list[tuple[str, int]]:
        """(language, files) of the collections, most files first."""
        ...

    def manifest_texts(self, collection_ids: list[int], names: Sequence[str]) -> list[str]:
        """The chunk texts of files named one of `names` (at the root or in any folder)."""
        ...


class VectorStore(Protocol):
    """Vectors of one embedding model, keyed by chunk id, searched within collections."""

    def active_model(self) -> tuple[str, int, str] | None:
        """(model fingerprint, dimension, quantization) of the stored vectors, if any."""
        ...

    def ensure(self, fingerprint: str, dim: int) -> bool:
        """Make room for this model's vectors; True when earlier vectors were dropped."""
        ...

    def pending(
        self,
        collection_ids: list[int] | None = None,
        limit: int | None = None,
        priority: EmbedPriority | None = None,
    ) -> list[tuple[int, int, str]]:
        """(chunk id, collection id, content hash) of chunks without a vector, in embedding order."""
        ...

    def pending_count(self, collection_ids: list[int] | None = None) -> int: ...

    def copy_identical(self, pending: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Give chunks whose content has a vector (a live twin's, or one kept after its chunk
        went: store/kept_vectors.py) that vector; returns those still without."""
        ...

    def trim_kept(self) -> int:
        """Drop the oldest kept vectors past the cap; returns how many went."""
        ...

    def kept_count(self) -> int:
        """Vectors kept after their chunks went, waiting for an identical chunk."""
        ...

    def put(self, rows: Sequence[tuple[int, int, str, Sequence[float]]]) -> int: ...

    def search(self, vector: Sequence[float], collection_ids: list[int], k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first, within the given collections."""
        ...

    def exact_search(
        self, vector: Sequence[float], collection_ids: list[int], k: int
    ) -> list[tuple[int, float]]: ...

    def search_among(self, vector: Sequence[float], chunk_ids: list[int], k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) of the k of `chunk_ids` nearest, best first: each compared."""
        ...

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, list[float]]:
        """chunk id -> its stored vector (as stored: scale unknown, direction kept), for those
        that have one (search/feedback.py moves a question toward them)."""
        ...

    def warm(self) -> int: ...


class StaticVectorStore(Protocol):
    """The static tier's chunk vectors (store/static_vectors.py): one per chunk, of its current
    text, and the token counts its IDF weights come from."""

    def active_model(self) -> str | None: ...

    def ensure(self, fingerprint: str) -> bool: ...

    def pending(self, collection_ids: list[int] | None = None) -> list[tuple[int, int, str]]: ...

    def coverage(self, collection_ids: list[int] | None = None) -> tuple[int, int]: ...

    def token_df(self, collection_id: int, tokens: Iterable[int]) -> tuple[int, dict[int, int]]: ...

    def put(self, rows: Sequence[tuple[int, int, str, np.ndarray, Iterable[int]]]) -> int: ...

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, tuple[int, np.ndarray]]: ...


class StoredLLMCache(Protocol):
    """models.cache.LLMCache kept in the index (store/ may not import models/), plus its size."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, value: str) -> None: ...

    def entries(self) -> int: ...



STALE_DAYS = 30  # a home's listing of a shared collection not renewed for this long keeps no rows


@dataclass(frozen=True)
class HomeListing:
    """A home (a QMD_DAEMON_HOME on some machine) that lists a collection of a shared index: its
    label (user@host:state folder), when it last said so, whether that is too long ago to keep
    the collection's rows, and whether it is the home asking."""

    label: str
    seen_at: float
    stale: bool
    this_home: bool


@dataclass(frozen=True)
class Release:
    """What a home's `collection remove` did on a shared index: `deleted` the rows (no other home
    lists it, or purged), else kept for `others`; `stale`: listings too old to keep them;
    `existed`: False when the server no longer held that collection (removed or made anew)."""

    name: str
    deleted: bool
    existed: bool
    others: list[HomeListing]
    stale: list[HomeListing]


class CollectionHomes(Protocol):
    """Which homes list which collection of a shared index (store/postgres/homes.py); a SQLite
    index has one home and no such record."""

    def sync(self, names: Collection[str]) -> None: ...

    def listings(self) -> dict[str, list[HomeListing]]: ...

    def release(self, name: str, collection_id: int, purge: bool) -> Release: ...
