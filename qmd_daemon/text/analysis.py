"""The analysed text a store backend indexes for a chunk's path, symbols and body: the text itself
plus the terms derived from it, so that words find identifiers and a CJK word finds the runs it is
part of. Every backend indexes these same strings."""

from __future__ import annotations

from qmd_daemon.text.chunk_model import Chunk
from qmd_daemon.text.cjk import cjk_bigrams, glued_words
from qmd_daemon.text.identifiers import identifier_parts_text


def _with_derived_terms(text: str, sep: str = " ") -> str:
    """TEXT, then the parts of its compound identifiers, and the pairs of its CJK runs with the
    words glued to them (see text/cjk.py)."""
    cjk = "" if text.isascii() else " ".join(cjk_bigrams(text) + glued_words(text))
    return sep.join((text, identifier_parts_text(text), cjk))


def fts_body(chunk: Chunk) -> str:
    return _with_derived_terms(chunk.text, "\n")


def fts_symbols(chunk: Chunk) -> str:
    return _with_derived_terms(" ".join(chunk.symbols))


def fts_path(path: str) -> str:
    return _with_derived_terms(path)
