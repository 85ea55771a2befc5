"""Code-aware analysis for the static vector tier: the words a chunk's static vector is a mean over.

Why: a static table has one row per WordPiece token, and code spelled as written tokenizes badly
(`getUserName` -> get ##user ##name, `::`, `);` and friends each a token of their own). Split
into the words FTS indexes (text/identifiers.py), lowercased, without punctuation, each token is a
whole word with a meaningful row (+0.11 NDCG@10 for the static vectors alone on the dev queries,
docs/scale.md "Code-aware analysis"). A chunk is three fields, the path, the names it defines
(symbols, heading) and the body: each field's tokens are averaged alone and the field means
summed, so a 300-token body does not drown a 5-token path.
"""

from __future__ import annotations

import re

from qmd_daemon.text.identifiers import split_identifier

_WORD = re.compile(r"\w+")  # a word, identifier or number in any script; punctuation is what lies between

ChunkFields = tuple[str, str, str]  # (path, names, body) as code words


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


def chunk_fields(path: str, symbols: str, heading: str, signature: str, text: str) -> ChunkFields:
    """The chunk's (path, names, body) as code words; the signature joins the body unless the text
    already starts with it (as chunk_model.embedding_text does)."""
    body = text if not signature or signature in text[: len(signature) + 200] else f"{signature}\n{text}"
    return code_words(path), code_words(f"{symbols} {heading}"), code_words(body)
