"""The static tier's analysis variants for bench/static_tier.py: `code[-pP][-nN][-capC][-qids]`.

The analysis itself (code words, a chunk's three fields) is the product's,
qmd_daemon/text/code_words.py; a variant weighs the fields' means, caps the body and may reduce
the query to its identifiers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qmd_daemon.text.code_words import code_words
from qmd_daemon.text.identifiers import looks_like_symbol


def query_identifiers(text: str) -> str:
    """The query's identifier-like words (`how does resolveRedirects work` -> `resolveRedirects`),
    or the whole query when it names none."""
    names = [w for w in text.split() if looks_like_symbol(w)]
    return " ".join(names) if names else text


@dataclass(frozen=True)
class FieldWeights:
    """Weight of each field's mean in a chunk's vector, and how many body tokens count."""

    path: float = 1.0
    names: float = 1.0
    body: float = 1.0
    cap: int | None = None  # body tokens kept (its first ones); None: all


_SPEC = re.compile(
    r"code(?:-p(?P<path>[\d.]+))?(?:-n(?P<names>[\d.]+))?(?:-cap(?P<cap>\d+))?(?P<qids>-qids)?"
)


@dataclass(frozen=True)
class CodeAnalysis:
    """A parsed `code[-pP][-nN][-capC][-qids]` variant: field weights (body 1), the body cap, and
    whether the query is reduced to its identifiers."""

    weights: FieldWeights
    query_ids_only: bool

    @classmethod
    def parse(cls, spec: str) -> CodeAnalysis | None:
        """The analysis a variant names, or None when it is not a `code` variant."""
        match = _SPEC.fullmatch(spec)
        if match is None:
            return None
        weights = FieldWeights(
            path=float(match["path"] or 1.0),
            names=float(match["names"] or 1.0),
            cap=int(match["cap"]) if match["cap"] else None,
        )
        return cls(weights, bool(match["qids"]))

    def query_text(self, query: str) -> str:
        """The question as the words its static vector is looked up with."""
        return code_words(query_identifiers(query) if self.query_ids_only else query)
