"""Static token vectors distilled from the configured embedder (the model2vec method).

Why: the deep embedder runs a transformer per chunk (MiniLM ~9 chunks/s on 2 cores, 500k chunks
~16 h). Distilled once, a table of one vector per vocabulary token turns a chunk's vector into a
lookup and a weighted mean: thousands of chunks a second, so every chunk gets a vector minutes
after install while the deep model catches up.

Distillation (Tulkens & van Dongen 2024, model2vec): every vocabulary token is embedded alone
through llama.cpp with the embedder's own framing and pooling, the rows are reduced by PCA (numpy
SVD), then weighted by the token's Zipf rank (SIF: a / (a + p(rank))) so that frequent tokens say
less. A text's vector is the normalised mean of its tokens' rows, tokenized by the same model.
The table is saved as a .npy keyed by the embedder's fingerprint; same model, same table.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from qmd_daemon.models.embedder import Embedder
from qmd_daemon.models.runtime import decode_pooled

if TYPE_CHECKING:
    import numpy as np
else:  # numpy on first use, after llama.cpp (why: qmd_daemon/numeric.py)
    from qmd_daemon.numeric import np

STATIC_DIMS = 256
SIF_COEFFICIENT = 1e-4  # model2vec's default
DISTILL_BATCH = 64  # token sequences per decode (3 tokens each)
STATIC_DIR = "static"


def table_path(models_dir: Path, fingerprint: str, dims: int = STATIC_DIMS) -> Path:
    """Where the table of an embedder lives: next to the models, named by its fingerprint."""
    digest = hashlib.sha256(fingerprint.encode("utf-8")).hexdigest()[:16]
    return models_dir / STATIC_DIR / f"{digest}-{dims}.npy"


def _frame(llm: Any, encoder: bool) -> tuple[list[int], list[int]]:
    """The tokens the embedder puts around any input: [CLS] .. [SEP] for encoders (what the
    tokenizer adds to an empty text), BOS .. EOS for decoders (the EOS its last-token pooling reads)."""
    empty = llm.tokenize(b"", add_bos=True, special=False)
    if encoder:
        return empty[:1], empty[1:]
    return empty, [llm.token_eos()]


def embed_vocabulary(embedder: Embedder, progress: bool | None = None,
                     tokens: Sequence[int] | None = None) -> np.ndarray:
    """The pooled output of each vocabulary token alone (all of them, or `tokens`), one float32
    row each, DISTILL_BATCH sequences per llama.cpp decode."""
    with embedder.handle.acquire() as llm:
        ids = list(range(llm.n_vocab())) if tokens is None else list(tokens)
        dim = embedder.dim or llm.n_embd()
        from llama_cpp._internals import LlamaBatch

        batch = LlamaBatch(n_tokens=embedder.handle.n_ctx, embd=0, n_seq_max=1, verbose=False)
        head, tail = _frame(llm, embedder.encoder)
        rows = np.zeros((len(ids), dim), dtype=np.float32)
        show = sys.stderr.isatty() if progress is None else progress
        bar = tqdm(total=len(ids), desc="distilling", unit="token", disable=not show, file=sys.stderr)
        try:
            for start in range(0, len(ids), DISTILL_BATCH):
                seqs = [[*head, t, *tail] for t in ids[start : start + DISTILL_BATCH]]
                pooled = decode_pooled(llm, batch, seqs, embedder.handle.n_ctx, dim, DISTILL_BATCH)
                rows[start : start + len(seqs)] = np.asarray(pooled, dtype=np.float32)
                bar.update(len(seqs))
        finally:
            bar.close()
    return rows


def principal_components(rows: np.ndarray, dims: int = STATIC_DIMS) -> np.ndarray:
    """The rows projected on their first `dims` principal axes (SVD of the centred rows)."""
    centred = rows - rows.mean(axis=0, keepdims=True)
    dims = min(dims, *centred.shape)
    _u, _s, vt = np.linalg.svd(centred, full_matrices=False)
    return (centred @ vt[:dims].T).astype(np.float32)


def zipf_weights(n_tokens: int) -> np.ndarray:
    """SIF weight of each token by its Zipf rank: token ids stand for frequency ranks, as
    model2vec assumes of a vocabulary, so frequent tokens count less in a mean."""
    inverse_rank = 1.0 / np.arange(2, n_tokens + 2, dtype=np.float64)
    probability = inverse_rank / inverse_rank.sum()
    return (SIF_COEFFICIENT / (SIF_COEFFICIENT + probability)).astype(np.float32)


def static_table(vocabulary_rows: np.ndarray, dims: int = STATIC_DIMS) -> np.ndarray:
    """The vocabulary's vectors reduced and weighted: the table a text's vector is a mean over."""
    return principal_components(vocabulary_rows, dims) * zipf_weights(len(vocabulary_rows))[:, None]


def distill(embedder: Embedder, dims: int = STATIC_DIMS, progress: bool | None = None) -> np.ndarray:
    """The static table of an embedder: vocabulary embedded, reduced and weighted."""
    return static_table(embed_vocabulary(embedder, progress), dims)


def load_or_distill(embedder: Embedder, models_dir: Path, dims: int = STATIC_DIMS,
                    progress: bool | None = None) -> np.ndarray:
    """The saved table for this embedder, distilled and saved (0600 not needed: public data)
    when there is none yet."""
    path = table_path(models_dir, embedder.fingerprint, dims)
    if path.is_file():
        return np.load(path)
    table = distill(embedder, dims, progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial.npy")
    np.save(partial, table)
    partial.replace(path)
    return table


class StaticEmbedder:
    """Embeds texts with a distilled table; the same interface as `Embedder` (fingerprint, dim,
    embed_documents, embed_query), so the embedding pass and vector search take either."""

    def __init__(self, embedder: Embedder, table: np.ndarray,
                 analyse: Callable[[str], str] | None = None) -> None:
        self.source = embedder
        self.table = table
        self.dim: int = int(table.shape[1])
        self.fingerprint = f"static{self.dim}:{embedder.fingerprint}"
        self.analyse = analyse

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's tokens by the embedder's own tokenizer, without [CLS]/[SEP] or BOS."""
        if self.analyse is not None:
            texts = [self.analyse(t) for t in texts]
        with self.source.handle.acquire() as llm:
            return [llm.tokenize(t.encode("utf-8", "replace"), add_bos=False, special=False) for t in texts]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One normalised vector per text: the mean of its tokens' rows (zeros for no token)."""
        token_lists = self.token_ids(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, tokens in enumerate(token_lists):
            if tokens:
                out[i] = self.table[tokens].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return out.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
