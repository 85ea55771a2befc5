"""Code-aware analysis for the static tier: what a chunk's static vector is a mean over.

Why: a static table has one row per WordPiece token, and code spelled as written tokenizes badly
(`getUserName` -> get ##user ##name, `::`, `);` and friends each a token of their own). Split
into the words FTS indexes (qmd_daemon/text/identifiers.py), lowercased, without punctuation,
each token is a whole word with a meaningful row. A chunk is three fields, the path and the names
it defines (symbols, heading) carrying most of its meaning and the body a long tail: each field's
tokens are averaged alone and the field means are summed with weights, so a 300-token body does
not drown a 5-token path; the body keeps its first `cap` tokens at most.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qmd_daemon.text.identifiers import looks_like_symbol, split_identifier

_WORD = re.compile(r"\w+")  # a word, identifier or number in any script; punctuation is what lies between


def code_words(text: str) -> str:
    """`getUserName(user_id)` -> `get user name user id`: identifiers split into their parts,
    everything lowercased, punctuation and bare numbers dropped."""
    out: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        if word.lstrip("_")[:1].isdigit():
            continue  # a number (42, 0x1f, 3rd): no meaning a table row carries
        out.extend(split_identifier(word) or [word.strip("_").lower()])
    return " ".join(w for w in out if w)


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

    def chunk_fields(self, path: str, symbols: str, heading: str, signature: str,
                     text: str) -> tuple[str, str, str]:
        """The chunk's (path, names, body) as the words the table is looked up with; the
        signature joins the body unless the text already starts with it (as embedding_text)."""
        body = text if not signature or signature in text[: len(signature) + 200] else f"{signature}\n{text}"
        return code_words(path), code_words(f"{symbols} {heading}"), code_words(body)

    def query_text(self, query: str) -> str:
        return code_words(query_identifiers(query) if self.query_ids_only else query)
