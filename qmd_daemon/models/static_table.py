"""The static vector tier's model: token rows distilled from the configured embedder (model2vec).

Why: the deep embedder runs a transformer per chunk (MiniLM ~9 chunks/s on 2 cores, 500k chunks
~16 h; Qwen3 far slower). Each vocabulary token embedded alone through llama.cpp with the
embedder's own framing and pooling gives one row; a chunk's static vector is then a weighted mean
of its tokens' rows (thousands of chunks a second), so every chunk has a vector minutes after
install while the deep model catches up (Tulkens & van Dongen 2024; docs/scale.md).

Rows are distilled LAZILY: only the tokens the indexed chunks use, when a chunk first uses them
(MiniLM's whole 30k vocabulary takes 78-174 s here, Qwen3's 151k far longer), and kept in a
file under the models folder keyed by the embedder's fingerprint. The rows are the embedder's
own output space (no PCA fitted on anything): a stored chunk vector stays valid however the
index grows. Text is tokenized by a vocabulary-only llama.cpp instance of the same file, so a
search's query vector is a tokenizer call and a table lookup, never a decode, and never waits
for the model lock a background embedding holds.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qmd_daemon.models import ModelError
from qmd_daemon.models.embedder import Embedder
from qmd_daemon.models.runtime import decode_pooled, llama_module
from qmd_daemon.progress import progress_bar

if TYPE_CHECKING:
    import numpy as np
else:  # numpy on first use, after llama.cpp (why: qmd_daemon/numeric.py)
    from qmd_daemon.numeric import np

DISTILL_BATCH = 64  # token sequences per decode (3 tokens each)
# Rows distilled but not yet written, past which `distil` writes the file: the whole file is
# rewritten each time (15 MB for MiniLM's rows, ~80 MB for Qwen3's), so not after every batch of
# chunks; a kill loses at most these (distilled again, identically, by the next pass).
SAVE_EVERY = 4096
STATIC_DIR = "static"
log = logging.getLogger("qmd_daemon.static")


def rows_path(models_dir: Path, fingerprint: str) -> Path:
    """Where an embedder's distilled token rows live: next to the models, named by its fingerprint."""
    digest = hashlib.sha256(fingerprint.encode("utf-8")).hexdigest()[:16]
    return models_dir / STATIC_DIR / f"{digest}-rows.npz"


def _frame(embedder: Embedder, llm: Any) -> tuple[list[int], list[int]]:
    """The tokens the embedder puts around any input, taken from its own framing of an empty text:
    [CLS] .. [SEP] for encoders, (BOS) .. EOS for decoders (the EOS its last-token pooling reads).
    Asking the tokenizer alone is wrong for a Qwen3-Embedding GGUF whose header sets
    `add_eos_token`: it answers [EOS] for an empty text, and the rows were read from EOS t EOS."""
    framed = embedder.framed_tokens(llm, "")
    return framed[:-1], framed[-1:]


def embed_vocabulary(embedder: Embedder, progress: bool | None = None,
                     tokens: Sequence[int] | None = None) -> np.ndarray:
    """The pooled output of each vocabulary token alone (all of them, or `tokens`), one float32
    row each, DISTILL_BATCH sequences per llama.cpp decode. The model is taken for one decode at
    a time, so a search's question waits for one decode, not for a whole distillation."""
    with embedder.handle.acquire() as llm:
        ids = list(range(llm.n_vocab())) if tokens is None else list(tokens)
        dim = embedder.dim or llm.n_embd()
        head, tail = _frame(embedder, llm)
    from llama_cpp._internals import LlamaBatch

    batch = LlamaBatch(n_tokens=embedder.handle.n_ctx, embd=0, n_seq_max=1, verbose=False)
    rows = np.zeros((len(ids), dim), dtype=np.float32)
    bar = progress_bar("distilling", "token", progress, total=len(ids))
    try:
        for start in range(0, len(ids), DISTILL_BATCH):
            seqs = [[*head, t, *tail] for t in ids[start : start + DISTILL_BATCH]]
            with embedder.handle.acquire() as llm:
                pooled = decode_pooled(llm, batch, seqs, embedder.handle.n_ctx, dim, DISTILL_BATCH)
            rows[start : start + len(seqs)] = np.asarray(pooled, dtype=np.float32)
            bar.update(len(seqs))
    finally:
        bar.close()
    return rows


class TokenRows:
    """The rows distilled so far (float16, the tokens' ids beside them), read from and saved to
    one file. A file that cannot be read as rows of this width is set aside with a one-line
    warning and the rows are distilled again as needed: it is a cache, never the only copy."""

    def __init__(self, path: Path, n_vocab: int, dim: int) -> None:
        self.path, self.n_vocab, self.dim = path, n_vocab, dim
        self.ids = np.zeros(0, dtype=np.int32)
        self.rows = np.zeros((0, dim), dtype=np.float16)
        self.slot = np.full(n_vocab, -1, dtype=np.int64)  # token id -> its row, -1: not distilled
        self.unsaved = 0  # rows added since the file was written
        self._seen: tuple[int, int] | None = None  # the file's (mtime_ns, size) as last read or written
        self._save_failed = False  # said once: the folder cannot be written
        self._save_at = SAVE_EVERY  # unsaved rows that make a save due (save_due)
        self.merge_saved()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            info = self.path.stat()
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    def merge_saved(self) -> int:
        """Take the rows the file holds and this process lacks; how many. Why: another process
        (a terminal's `embed` beside the daemon) distils rows too: without them a query word only
        its chunks hold weighs nothing here, and this process's next save would drop them from the
        file. One stat when the file has not changed since this process last read or wrote it."""
        stamp = self._stamp()
        if stamp is None or stamp == self._seen or not self.path.is_file():
            return 0
        self._seen = stamp
        try:
            with np.load(self.path) as data:  # allow_pickle stays False: no object is ever built
                ids = np.asarray(data["ids"], dtype=np.int64)
                rows = np.asarray(data["rows"], dtype=np.float16)
            in_vocab = not ids.size or 0 <= ids.min() <= ids.max() < self.n_vocab
            if ids.ndim != 1 or rows.shape != (len(ids), self.dim) or not in_vocab:
                raise ValueError(f"ids {ids.shape}, rows {rows.shape}: expected (n,) and (n, {self.dim})")
        except Exception as exc:  # noqa: BLE001 - any unreadable cache (zip, pickle, shape, dtype) is rebuilt
            print(f"qmd-daemon: the static tier's token rows {self.path} are unreadable ({exc}); "
                  "distilling them again", file=sys.stderr)
            try:
                self.path.unlink(missing_ok=True)
                self._seen = None
            except OSError:  # another user's file in a folder this one cannot write: left, not read
                pass  # again until it changes (the PermissionError failed every search and embed)
            return 0
        ids, first = np.unique(ids, return_index=True)
        new = self.slot[ids] < 0
        if new.any():
            unsaved = self.unsaved  # rows read from the file are saved already
            self.add(ids[new], rows[first[new]])
            self.unsaved = unsaved
        return int(new.sum())

    def missing(self, tokens: Sequence[int]) -> list[int]:
        """The distinct tokens among `tokens` without a row yet."""
        unique = np.unique(np.asarray(tokens, dtype=np.int64))
        return [int(t) for t in unique[self.slot[unique] < 0]]

    def add(self, ids: Sequence[int] | np.ndarray, rows: np.ndarray) -> None:
        """New rows for a search on another thread to see whole: the arrays are replaced, never
        changed in place, `rows` before `slot` (gather reads `slot` first, and old slots stay valid)."""
        ids = np.asarray(ids, dtype=np.int64)
        slot = self.slot.copy()
        slot[ids] = np.arange(len(self.ids), len(self.ids) + len(ids))
        self.ids = np.concatenate([self.ids, ids.astype(np.int32)])
        self.rows = np.concatenate([self.rows, np.asarray(rows, dtype=np.float16)])
        self.slot = slot
        self.unsaved += len(ids)

    def save_due(self) -> bool:
        """Whether enough rows are unsaved to write the file in the middle of a pass. After a
        failed write the next try waits until twice as many are unsaved: on a full disk every
        distilled batch rewrote the whole file only to fail again."""
        return self.unsaved >= self._save_at

    def save(self) -> None:
        """Written whole to a temporary file, then moved over the old one (a kill leaves either).
        Owner-only (0600 from creation, folder 0700), unlike the downloaded model files: which
        tokens have rows tells which words the indexed, possibly private, code uses.

        A models folder this user cannot write (QMD_MODELS_DIR shared read-only between homes,
        EACCES) keeps the rows in this process only, said once in the log: the OSError failed
        every `embed`, so no chunk ever got its deep vector."""
        self.merge_saved()  # another process's rows stay in the file
        try:
            self._write()
        except OSError as exc:
            if not self._save_failed:
                log.warning("static tier: cannot write its token rows to %s (%s); kept in memory only",
                            self.path, exc.strerror or exc)
            self._save_failed = True
            self._save_at = max(SAVE_EVERY, 2 * self.unsaved)

    def _write(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder = self.path.parent
        fd, partial = tempfile.mkstemp(prefix=f".{self.path.stem}.", suffix=".partial.npz", dir=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, ids=self.ids, rows=self.rows)
            os.replace(partial, self.path)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
        self._seen = self._stamp()
        self.unsaved = 0
        self._save_at = SAVE_EVERY

    def gather(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        """The tokens' rows as float32; a token never distilled (only a query can name one) is zero."""
        ids = np.asarray(tokens, dtype=np.int64)
        slot, rows = self.slot[ids], self.rows
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        known = slot >= 0
        out[known] = rows[slot[known]]
        return out


class StaticModel:
    """An embedder's static tier: its tokenizer (vocabulary only) and its distilled rows. Pooling
    weights come from the caller (the index's token statistics), so this object knows no corpus."""

    def __init__(self, embedder: Embedder, models_dir: Path) -> None:
        self.source = embedder
        self.fingerprint = f"static:{embedder.fingerprint}"
        path = str(embedder.handle.path)
        try:
            self._vocab = llama_module().Llama(model_path=path, vocab_only=True, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            name = embedder.handle.path.name
            raise ModelError(f"llama.cpp could not read the vocabulary of {name}: {exc}") from None
        self.dim = embedder.dim or int(self._vocab.n_embd())
        self._tokenize_lock = threading.Lock()
        self._distil_lock = threading.Lock()
        n_vocab = int(self._vocab.n_vocab())
        self.rows = TokenRows(rows_path(models_dir, embedder.fingerprint), n_vocab, self.dim)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's tokens by the embedder's own tokenizer, without [CLS]/[SEP] or BOS."""
        with self._tokenize_lock:
            return [self._vocab.tokenize(t.encode("utf-8", "replace"), add_bos=False, special=False)
                    for t in texts]

    def distil(self, tokens: Sequence[int], progress: bool | None = None) -> int:
        """Rows for those of `tokens` that have none yet (a decode each, 64 a batch); how many
        were distilled. Written to the file once SAVE_EVERY are unsaved (`save_rows`: the rest)."""
        with self._distil_lock:
            missing = self.rows.missing(tokens)
            if missing:
                self.rows.add(missing, embed_vocabulary(self.source, progress, missing))
                if self.rows.save_due():
                    self.rows.save()
            return len(missing)

    def take_saved_rows(self) -> None:
        """Rows another process saved since (TokenRows.merge_saved), before a query is pooled;
        skipped while this process distils: a search never waits for a distillation."""
        if self._distil_lock.acquire(blocking=False):
            try:
                self.rows.merge_saved()
            finally:
                self._distil_lock.release()

    def save_rows(self) -> None:
        """Write the rows distilled since the file was last written, if any (a pass's end)."""
        with self._distil_lock:
            if self.rows.unsaved:
                self.rows.save()

    def idf(self, docs: int, df: dict[int, int]) -> np.ndarray:
        """IDF over the vocabulary, log((docs + 1) / (df + 1)), from the index's counts: chunks
        weighted by it gained 0.01-0.05 over model2vec's Zipf-rank weights (docs/scale.md)."""
        counts = np.zeros(self.rows.n_vocab, dtype=np.float64)
        if df:
            counts[np.fromiter(df, dtype=np.int64)] = np.fromiter(df.values(), dtype=np.float64)
        return np.log((docs + 1) / (counts + 1)).astype(np.float32)

    def pool(self, fields: Sequence[Sequence[Sequence[int]]], weights: np.ndarray) -> np.ndarray:
        """One unit vector per chunk (a row of `fields`: its fields' tokens): the sum over fields of
        the mean of weight x row over the field's tokens. `weights`: token id -> weight, an array
        over the vocabulary. A chunk with no token is a zero row."""
        out = np.zeros((len(fields), self.dim), dtype=np.float32)
        for i, chunk in enumerate(fields):
            for tokens in chunk:
                if tokens:
                    ids = np.asarray(tokens, dtype=np.int64)
                    out[i] += (self.rows.gather(ids) * weights[ids][:, None]).mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
