"""Plain file-level BM25 baseline (k1 1.2, b 0.75): one document per file, path + text.

Tokens: runs of alphanumerics, split again at camelCase / digit boundaries, lowercased
("HTTPServer_v2" -> http, server, v, 2). Query terms count once each (Okapi with k3 = 0), so a
long bug report is not dominated by the words it repeats.

Standalone (no engine needed): `python bench/baseline_bm25.py [--set queries|issues] [--scope root|whole]`
walks the folders with the default mask/excludes and scores the eval with `bench/retrieval.py`'s scorer.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

_RUN = re.compile(r"[^\W_]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[^\W\d_]+")


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    for run in _RUN.findall(text):
        if run.isascii() and (run.islower() or run.isdigit()):
            out.append(run)
            continue
        out.extend(p.lower() for p in _PART.findall(run))
    return out


class BM25Index:
    """Inverted index over whole files; `search` returns paths best first (score > 0 only)."""

    def __init__(self, docs: Mapping[str, str], k1: float = 1.2, b: float = 0.75):
        self.paths: list[str] = sorted(docs)
        self.k1, self.b = k1, b
        vocab: dict[str, int] = {}
        term_ids: list[int] = []
        doc_ids: list[int] = []
        tfs: list[int] = []
        lengths = np.zeros(len(self.paths), dtype=np.float64)
        for d, path in enumerate(self.paths):
            counts = Counter(tokenize(path + "\n" + docs[path]))
            lengths[d] = sum(counts.values())
            for term, tf in counts.items():
                term_ids.append(vocab.setdefault(term, len(vocab)))
                doc_ids.append(d)
                tfs.append(tf)
        self.vocab = vocab
        n = len(self.paths)
        avgdl = float(lengths.mean()) if n else 1.0
        t = np.asarray(term_ids, dtype=np.int64)
        order = np.argsort(t, kind="stable")
        self._docs = np.asarray(doc_ids, dtype=np.int64)[order]
        tf = np.asarray(tfs, dtype=np.float64)[order]
        dl = lengths[self._docs]
        self._weights = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / max(avgdl, 1e-9)))
        df = np.bincount(t, minlength=len(vocab))
        self._starts = np.concatenate([[0], np.cumsum(df)])
        self._idf = np.log(1 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> np.ndarray:
        scores = np.zeros(len(self.paths), dtype=np.float64)
        for term in set(tokenize(query)):
            tid = self.vocab.get(term)
            if tid is None:
                continue
            lo, hi = self._starts[tid], self._starts[tid + 1]
            scores[self._docs[lo:hi]] += self._idf[tid] * self._weights[lo:hi]
        return scores

    def search(self, query: str, limit: int = 10) -> list[str]:
        scores = self.scores(query)
        hits = np.flatnonzero(scores > 0)
        # best score first; ties by path order (self.paths is sorted) for determinism
        ranked = hits[np.lexsort((hits, -scores[hits]))][:limit]
        return [self.paths[i] for i in ranked]


# -- standalone file walk (the engine's default mask and excludes, no .gitignore) ----------------


def mask_extensions(mask: str) -> set[str]:
    m = re.search(r"\{([^}]*)\}", mask)
    return {"." + e.strip().lower() for e in m.group(1).split(",")} if m else set()


def walk_files(root: Path, extensions: Iterable[str], excludes: Iterable[str],
               max_bytes: int = 1024 * 1024) -> dict[str, str]:
    """Text of every file under root with one of the extensions, paths relative to root (POSIX)."""
    exts = set(extensions)
    dir_excl = {e.rstrip("/") for e in excludes if e.endswith("/")}
    file_excl = [e for e in excludes if not e.endswith("/")]
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in dir_excl)
        for name in sorted(filenames):
            if Path(name).suffix.lower() not in exts or any(fnmatch.fnmatch(name, p) for p in file_excl):
                continue
            full = Path(dirpath) / name
            try:
                if full.stat().st_size > max_bytes:
                    continue
                data = full.read_bytes()
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            out[full.relative_to(root).as_posix()] = data.decode("utf-8", errors="replace")
    return out


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.retrieval import main

    sys.exit(main(["--files", "walk", "--methods", "bm25-file", *sys.argv[1:]]))
