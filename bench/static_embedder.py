"""Static token vectors distilled from the configured embedder (the model2vec method): the bench's
variants (PCA, Zipf weights, a whole-vocabulary table). The product's tier, which distils only the
tokens its chunks use, is qmd_daemon/models/static_table.py; the distillation itself is its
`embed_vocabulary`, imported here.

Why: the deep embedder runs a transformer per chunk (MiniLM ~9 chunks/s on 2 cores, 500k chunks
~16 h). Distilled once, a table of one vector per vocabulary token turns a chunk's vector into a
lookup and a weighted mean: thousands of chunks a second, so every chunk gets a vector minutes
after install while the deep model catches up.

Distillation (Tulkens & van Dongen 2024, model2vec): every vocabulary token is embedded alone
through llama.cpp with the embedder's own framing and pooling, the rows are reduced by PCA (numpy
SVD), then weighted by the token's Zipf rank (SIF: a / (a + p(rank))) so that frequent tokens say
less. A text's vector is the normalised mean of its tokens' rows, tokenized by the same model.
bench/static_tier.py distils the vocabulary (`--table` keeps its rows) and builds each variant's
table from these parts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from qmd_daemon.models.embedder import Embedder

if TYPE_CHECKING:
    import numpy as np
else:  # numpy on first use, after llama.cpp (why: qmd_daemon/numeric.py)
    from qmd_daemon.numeric import np

STATIC_DIMS = 256
SIF_COEFFICIENT = 1e-4  # model2vec's default


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


class StaticEmbedder:
    """Embeds texts with a distilled table; the same interface as `Embedder` (fingerprint, dim,
    embed_documents, embed_query), so the embedding pass and vector search take either.
    `analyse` rewrites every text (documents and queries) before tokenizing; `common`, when set,
    is a direction removed from every vector (SIF's principal component, Arora et al. 2017)."""

    def __init__(self, embedder: Embedder, table: np.ndarray,
                 analyse: Callable[[str], str] | None = None) -> None:
        self.source = embedder
        self.table = table
        self.dim: int = int(table.shape[1])
        self.fingerprint = f"static{self.dim}:{embedder.fingerprint}"
        self.analyse = analyse
        self.common: np.ndarray | None = None

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's tokens by the embedder's own tokenizer, without [CLS]/[SEP] or BOS."""
        with self.source.handle.acquire() as llm:
            return [llm.tokenize(t.encode("utf-8", "replace"), add_bos=False, special=False) for t in texts]

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's tokens after `analyse`."""
        if self.analyse is not None:
            texts = [self.analyse(t) for t in texts]
        return self.tokenize(texts)

    def mean_rows(self, tokens: Sequence[int]) -> np.ndarray:
        """The mean of the tokens' rows (zeros for no token)."""
        if not tokens:
            return np.zeros(self.dim, dtype=np.float32)
        return self.table[list(tokens)].mean(axis=0)

    def finish(self, vectors: np.ndarray) -> list[list[float]]:
        """Rows without the common direction, normalised (zero rows stay zero)."""
        if self.common is not None:
            vectors = vectors - np.outer(vectors @ self.common, self.common)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0).tolist()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One normalised vector per text: the mean of its tokens' rows."""
        token_lists = self.token_ids(texts)
        return self.finish(np.stack([self.mean_rows(t) for t in token_lists]) if token_lists
                           else np.zeros((0, self.dim), dtype=np.float32))

    def field_tokens(self, chunks: Sequence[Sequence[str]], cap: int | None = None) -> list[list[list[int]]]:
        """Each chunk's fields (texts already analysed) as tokens; the last field (the body)
        keeps its first `cap` tokens."""
        flat = self.tokenize([field for fields in chunks for field in fields])
        out: list[list[list[int]]] = []
        start = 0
        for fields in chunks:
            tokens, start = flat[start : start + len(fields)], start + len(fields)
            if cap is not None:
                tokens[-1] = tokens[-1][:cap]
            out.append(tokens)
        return out

    def embed_field_tokens(self, chunks: Sequence[Sequence[Sequence[int]]],
                           weights: Sequence[float]) -> list[list[float]]:
        """One normalised vector per chunk: the weighted sum of its fields' token means, so a
        short field (the path, the names defined) counts as much as its weight, however long
        the body."""
        out = np.zeros((len(chunks), self.dim), dtype=np.float32)
        for i, fields in enumerate(chunks):
            for weight, tokens in zip(weights, fields, strict=True):
                out[i] += weight * self.mean_rows(tokens)
        return self.finish(out)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
