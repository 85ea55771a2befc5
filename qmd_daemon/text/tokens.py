"""The tokens SQLite's FTS5 tokenizer `porter unicode61 tokenchars '_'` (store/schema.py) makes of a
text, in Python, so that a backend without FTS5 (PostgreSQL) indexes and queries exactly the terms
the SQLite index holds and BM25 counts the same things on both.

unicode61: letters, digits, private-use characters and `_` form tokens; everything else separates.
Tokens are case-folded, and a Latin letter with one diacritic loses it (`é` -> `e`; `ệ`, Greek,
Arabic and kana keep theirs, as in FTS5's default remove_diacritics 1). porter: tokens of 3 to 64
bytes are stemmed by Martin Porter's own version of his algorithm (NLTK's MARTIN_EXTENSIONS mode:
`possibly` -> `possibl`, where the 1980 paper and Snowball's "porter" give `possibli`), as FTS5
does; shorter or longer ones are kept whole. Known gap: FTS5's character table is of an older
Unicode, so symbols added since (newer emoji) are token characters to FTS5 and separators here.
tests/text/test_tokens.py checks the agreement on the repository's own files.
"""

from __future__ import annotations

import re
import string
import unicodedata
from functools import lru_cache
from typing import Any

from qmd_daemon.numeric import numpy_module

# FTS5's porter leaves tokens outside 3..64 bytes (UTF-8) unstemmed (fts5_tokenize.c).
_STEM_MIN_BYTES, _STEM_MAX_BYTES = 3, 64
# FTS5 applies a suffix rule only to a token longer than the suffix; Porter's algorithm applies
# it to the token that is the suffix too. These are the tokens where that changes the stem.
_WHOLE_SUFFIX_STEMS = {"ies": "ie", "sses": "sse", "eed": "e"}
_ASCII_TOKEN = re.compile(r"[a-z0-9_]+")
# The combining marks unicode61 drops inside a token (decomposed text: `e` + U+0301): those that
# make a precomposed Latin letter with a base letter; other marks separate tokens.
_DROPPED_MARKS = frozenset(
    chr(mark)
    for mark in range(0x300, 0x370)
    if unicodedata.normalize("NFC", chr(mark)) == chr(mark)
    and any(len(unicodedata.normalize("NFC", base + chr(mark))) == 1 for base in string.ascii_letters)
)


def _is_token_char(char: str) -> bool:
    if char in _DROPPED_MARKS:
        return True
    category = unicodedata.category(char)
    return category[0] in "LN" or category == "Co"


@lru_cache(maxsize=8192)
def _fold(char: str) -> str:
    """A non-ASCII token character as unicode61 folds it: case-folded to one character, and a
    Latin letter with diacritics to its base letter."""
    if char in _DROPPED_MARKS:
        return ""
    folded = char.casefold()
    if len(folded) != 1:  # `ß` -> `ss`: unicode61 folds one character to one
        folded = char.lower() if len(char.lower()) == 1 else char
    decomposed = unicodedata.normalize("NFD", folded)
    # remove_diacritics 1 (FTS5's default): a letter with two marks (`ệ`) keeps them
    if len(decomposed) == 2 and decomposed[0].isascii() and unicodedata.combining(decomposed[1]):
        return decomposed[0].lower()  # `İ` -> `i`
    return folded


def _raw_tokens(text: str) -> list[str]:
    if text.isascii():
        return _ASCII_TOKEN.findall(text.lower())
    tokens: list[str] = []
    current: list[str] = []
    for char in text:
        if char.isascii():
            if char.isalnum() or char == "_":
                current.append(char.lower())
                continue
        elif _is_token_char(char):
            current.append(_fold(char))
            continue
        if current:
            tokens.append("".join(current))
            current = []
    if current:
        tokens.append("".join(current))
    return tokens


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    """NLTK's Porter stemmer, imported on first use: NLTK imports numpy, which may come only after
    llama.cpp's library (qmd_daemon/numeric.py), and every index open reaches this module."""
    numpy_module()
    from nltk.stem.porter import PorterStemmer  # type: ignore[import-untyped]

    return PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """One folded token as FTS5's porter stems it."""
    if token in _WHOLE_SUFFIX_STEMS:
        return _WHOLE_SUFFIX_STEMS[token]
    if token.isascii():
        if not _STEM_MIN_BYTES <= len(token) <= _STEM_MAX_BYTES:
            return token
        return str(_stemmer().stem(token, to_lowercase=False))
    # FTS5 stems the UTF-8 bytes: every byte of a multi-byte character counts as a consonant. The
    # bytes as Latin-1 characters are consonants to the stemmer too; it only ever strips ASCII
    # suffixes, so what is left decodes back whole.
    raw = token.encode("utf-8", "surrogatepass")
    if not _STEM_MIN_BYTES <= len(raw) <= _STEM_MAX_BYTES:
        return token
    stemmed = str(_stemmer().stem(raw.decode("latin-1"), to_lowercase=False))
    return stemmed.encode("latin-1").decode("utf-8", "surrogatepass")


def index_tokens(text: str) -> list[str]:
    """The tokens FTS5 indexes for TEXT, in order (a token's position is its index)."""
    return [stem(token) for token in _raw_tokens(text)]
