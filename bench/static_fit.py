"""Tokenlearn for the static tier: fit the token table to the deep model's chunk vectors.

Why: a table distilled from tokens embedded alone gives a chunk the mean of its words' meanings
out of context, which on code is close to a bag of the words BM25 already scores (docs/scale.md,
"A static vector tier"). Fitting the table so that a chunk's pooled static vector approximates
the deep model's vector of that chunk (model2vec's "tokenlearn"; least squares here, not its SGD)
moves each token's row toward what the deep model makes of the chunks the token appears in.

The fit: A is the chunks x tokens pooling weights (the tier's field means times its token
weights), each row scaled so that the distilled table pools it to unit length; Y the deep chunk
vectors (unit length; the same space as the distilled rows, both being the embedder's pooled
output); E0 the distilled table. Minimise ||A E - Y||^2 + lam ||E - E0||^2 over the rows of the
tokens the chunks use (the others keep their E0 row): conjugate gradients on the normal
equations, every output dimension at once (one sparse product per step serves all of them).
`lam` is relative: times the mean of diag(A^T A), so one grid fits any corpus size.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from qmd_daemon.numeric import numpy_module

np = numpy_module()  # llama.cpp's library before numpy (qmd_daemon/numeric.py), then scipy on it
from scipy.sparse import csr_matrix, diags  # noqa: E402


def pooling_matrix(chunk_fields: Sequence[Sequence[Sequence[int]]], field_weights: Sequence[float],
                   token_weights: np.ndarray) -> csr_matrix:
    """A[c, t] = sum over fields f of weight_f x (count of t in f) / len(f), times t's weight:
    `A @ table` is StaticEmbedder.embed_field_tokens before normalising."""
    n_chunks, n_fields = len(chunk_fields), len(field_weights)
    lengths = np.fromiter((len(tokens) for fields in chunk_fields for tokens in fields), dtype=np.int64,
                          count=n_chunks * n_fields)
    flat = np.fromiter(itertools.chain.from_iterable(t for fields in chunk_fields for t in fields),
                       dtype=np.int64, count=int(lengths.sum()))
    share = np.zeros(len(lengths), dtype=np.float64)
    field_weight = np.tile(np.asarray(field_weights, dtype=np.float64), n_chunks)
    np.divide(field_weight, lengths, out=share, where=lengths > 0)
    rows = np.repeat(np.repeat(np.arange(n_chunks), n_fields), lengths)
    counts = csr_matrix((np.repeat(share, lengths), (rows, flat)), shape=(n_chunks, len(token_weights)))
    return csr_matrix(counts @ diags(np.asarray(token_weights, dtype=np.float64)))


def pooled(pooling: csr_matrix, table: np.ndarray) -> np.ndarray:
    """Each chunk's static vector, normalised (a chunk with no token stays zero)."""
    vectors = np.asarray(pooling @ table, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def mean_cosine(pooling: csr_matrix, table: np.ndarray, targets: np.ndarray) -> float:
    """How close the pooled static vectors come to the deep ones (targets unit length)."""
    return float(np.mean(np.sum(pooled(pooling, table) * targets, axis=1)))


@dataclass(frozen=True)
class FitReport:
    """What a fit did: tokens refitted, CG steps taken, residual left (relative)."""

    tokens: int
    steps: int
    residual: float


def fit_table(pooling: csr_matrix, targets: np.ndarray, start: np.ndarray, lam: float,
              max_steps: int = 40, tolerance: float = 1e-3) -> tuple[np.ndarray, FitReport]:
    """The table E nearest `start` (E0) whose pooled chunks approximate `targets` (see the module)."""
    used = np.flatnonzero(pooling.getnnz(axis=0))
    a = pooling[:, used]
    e0 = start[used].astype(np.float32)
    norms = np.linalg.norm(a @ e0, axis=1)
    keep = norms > 0
    a = csr_matrix(diags(1.0 / norms[keep]) @ a[keep], dtype=np.float32)  # float32: half the traffic
    at = csr_matrix(a.T)
    damp = lam * float(np.asarray(a.multiply(a).sum(axis=0)).mean())
    rhs = at @ (targets[keep].astype(np.float32) - a @ e0)
    delta = np.zeros_like(rhs)
    residual, direction = rhs.copy(), rhs.copy()
    energy = np.sum(residual * residual, axis=0)
    first = np.maximum(energy, 1e-20)
    steps = 0
    while steps < max_steps:
        steps += 1
        product = at @ (a @ direction) + damp * direction
        alpha = energy / np.maximum(np.sum(direction * product, axis=0), 1e-20)
        delta += alpha * direction
        residual -= alpha * product
        new_energy = np.sum(residual * residual, axis=0)
        if float(np.sqrt(np.max(new_energy / first))) < tolerance:
            energy = new_energy
            break
        direction = residual + (new_energy / np.maximum(energy, 1e-20)) * direction
        energy = new_energy
    table = start.astype(np.float32, copy=True)
    table[used] += delta.astype(np.float32)
    return table, FitReport(len(used), steps, float(np.sqrt(np.max(energy / first))))
