"""Pseudo-relevance feedback in vector space (Rocchio, 1971): the question's vector moved toward
the vectors of lexical's first hits before the vector list is scored.

Why: a question is a handful of words, so its static vector (a mean of a few token rows) is the
weak side of the cosine; BM25's first hits are mostly right, and document-to-document similarity
is what a bag-of-rows vector measures best (docs/ranking.md "Rocchio feedback for the vector
lists").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Feedback:
    """q' = q + weight x mean(v) over lexical's first `k` chunks (or, `by_file`, its first `k`
    files, each the mean of its chunks among the candidates), every vector a unit vector.
    `rescore` (the deep list; the static list always re-scores): lexical's candidates re-scored
    by their cosine to q' instead of a KNN with q'."""

    k: int = 5
    weight: float = 0.5
    by_file: bool = False
    rescore: bool = False

    def rows(self, ordered: np.ndarray, file_ids: list[int] | None = None) -> np.ndarray:
        """The feedback vectors of candidates `ordered` (unit rows, lexical's order): the first
        k rows, or with `by_file` (and each row's file id) the mean row of each of the first k files."""
        from qmd_daemon.numeric import np

        if not self.by_file or file_ids is None:
            return ordered[: self.k]
        files = list(dict.fromkeys(file_ids))[: self.k]
        return np.stack([ordered[[i for i, f in enumerate(file_ids) if f == file]].mean(axis=0)
                         for file in files]) if files else ordered[:0]


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row over its norm; a zero row stays zero."""
    from qmd_daemon.numeric import np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def rocchio(query: np.ndarray, feedback: np.ndarray, weight: float) -> np.ndarray:
    """The unit vector of unit(query) + weight x mean(feedback rows); the query's direction when
    there is no feedback row."""
    moved = unit_rows(query[None, :])[0]
    if len(feedback):
        moved = moved + weight * feedback.mean(axis=0)
    return unit_rows(moved[None, :])[0]
