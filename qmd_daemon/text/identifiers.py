"""Code-aware word splitting shared by indexing and querying.

`getUserName`, `get_user_name` and `get-user-name` all yield `get user name`, so a query in
words finds identifiers and a query by identifier finds the words.
"""

from __future__ import annotations

import re
from functools import lru_cache

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAME = re.compile(r"[^\W\d]\w*")  # an identifier in any script (`größe_berechnen`)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def split_identifier(word: str) -> list[str]:
    """Parts of a compound identifier, lowercased; [] when the word is not compound. The case
    rules are ASCII's: a word in another script splits at underscores only (not `Größe` -> gr, e)."""
    if not word.isascii():
        pieces = [p.lower() for p in word.split("_") if p]
        return pieces if len(pieces) > 1 else []
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    parts = [p for p in parts if p]
    return parts if len(parts) > 1 else []


def identifier_parts_text(text: str) -> str:
    """The parts of every compound identifier in text, space-separated (one run per occurrence)."""
    out: list[str] = []
    for word in NAME.findall(text):
        out.extend(indexed_parts(word))
    return " ".join(out)


# Why a cache: every word of every chunk passes here as it is indexed (a million words for 2,000
# files), and code repeats its identifiers: 95% of the words of the broad corpora's files are
# found in a cache of this size (1.2 MiB), which halves the cost of this step; one of 65,536 words
# held 18 MiB in the daemon and was no faster (docs/scale.md, "A first index's CPU").
@lru_cache(maxsize=1 << 12)
def indexed_parts(word: str) -> tuple[str, ...]:
    """The parts the index adds for a word of a text: a compound's (`get_user`, `getUser`), none
    for a plain word in one case (`utf8`, `HTTP`) or one of two letters."""
    if len(word) > 2 and (("_" in word.strip("_")) or not (word.islower() or word.isupper())):
        return tuple(split_identifier(word))
    return ()


def is_acronym(word: str) -> bool:
    """`JSON`, `HTTP`, `AST`: prose writes an acronym in capitals whatever the code calls it; it
    names a type spelled `JSON` or `Ast`, not a lower-case `json` variable or alias."""
    return len(word) > 1 and word.isascii() and word.isalpha() and word.isupper()


def looks_like_symbol(word: str) -> bool:
    """A token a programmer would type as an identifier (semble's rule, plus dotted names)."""
    core = word.strip("`()")
    if not core or " " in core:
        return False
    if "." in core or "::" in core:
        return all(IDENTIFIER.fullmatch(p) for p in re.split(r"\.|::", core) if p)
    if not IDENTIFIER.fullmatch(core):
        return False
    return core.startswith("_") or core[0].isupper() or any(c.isupper() or c == "_" for c in core[1:])
