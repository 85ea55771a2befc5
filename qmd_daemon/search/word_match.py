"""A question's words against identifiers and their parts, shared by scoring (path words, compound
names) and snippets (where a hit's window starts): one notion of "the question says this name"."""

from __future__ import annotations

import re
from functools import lru_cache

from qmd_daemon.search.query import STOPWORDS
from qmd_daemon.store.fts_tokens import query_tokens_of
from qmd_daemon.text.identifiers import IDENTIFIER, split_identifier

MIN_STEM = 4


class WordsMatching:
    """A question's words against names: a word and a name match when they are equal, or one
    starts the other and both have 3 letters or more. Found through the prefixes of each word and
    name, in the time of their letters: a bug report's ~60 words tried against each name of ~300
    candidate paths one pair at a time was 25k prefix tests a report (5.3 of its 57 ms of CPU at 503k
    chunks), and its candidates' names against its words as many again."""

    def __init__(self, words: list[str]):
        self.words = frozenset(words)
        self.by_prefix: dict[str, set[str]] = {}  # each prefix of 3+ letters -> the words it starts
        for word in self.words:
            for end in range(3, len(word) + 1):
                self.by_prefix.setdefault(word[:end], set()).add(word)

    def matched(self, names: frozenset[str]) -> set[str]:
        """The words that match any of `names`."""
        found = set(self.words & names)
        for name in names:
            found.update(p for end in range(3, len(name) + 1) if (p := name[:end]) in self.words)
            if len(name) >= 3:
                found |= self.by_prefix.get(name, set())
        return found

    def says(self, name: str) -> bool:
        """Whether any of the words matches `name`."""
        if name in self.words:
            return True
        return len(name) >= 3 and (
            name in self.by_prefix or any(name[:end] in self.words for end in range(3, len(name) + 1))
        )


@lru_cache(maxsize=65_536)
def name_parts(name: str) -> tuple[str, ...]:
    """The parts of a defined name that is an ASCII identifier. Kept per name: a question reads
    ~400 names of its candidates, and an agent's questions of one repository meet the same."""
    return tuple(split_identifier(name)) if IDENTIFIER.fullmatch(name) else ()


def stem_forms(words: list[str]) -> list[str]:
    """Each word as a name or a line must hold it: its stem, as the index stems it, where that
    begins the word (`comput` of `computed`, `root` of `roots`, `check` of `checks`), else the
    word (`directori` does not begin `directory`; a stem under MIN_STEM letters matches too much).
    Snippets: with the words alone, "how are integer square roots computed" matched sympy's
    `Compute square root of a` line for BM25, and the window showed the chunk's head. File names:
    code names a module after the doer of what a question says it does (`checker.lua` for
    "checks for updates", `formatter.ts` for "error formatting"), which only the stem begins."""
    stems = query_tokens_of(words)
    forms: list[str] = []
    for word in words:
        stem = stems.get(word, ())
        one = stem[0] if len(stem) == 1 else ""
        forms.append(one if len(one) >= MIN_STEM and word.startswith(one) else word)
    return forms


# Stopwords for matching a question's text that are nouns an abbreviation takes a letter from
# ("file system" -> `fs`)
_ABBREVIATED_STOPWORDS = frozenset({"file", "files", "code"})
# a word in any script (`über` whole, not its fragment `ber`), a hyphen joining words of one run
_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")


def initialisms(text: str) -> dict[str, tuple[str, ...]]:
    """The initials of each run of 2-3 consecutive content words of a question (3+ letters, a
    hyphen joining words of one run), lowercased -> the run's words: code abbreviates a module's
    subject so (`fs.c` for "file system", `TH.hs` for "Template Haskell", `sse.ts` for
    "server-sent events", `aof.c` for "append-only file")."""
    words: list[str | None] = []  # None: a word that breaks a run
    for match in _PLAIN_WORD.finditer(text):
        for word in match.group(0).lower().split("-"):
            content = len(word) >= 3 and (word not in STOPWORDS or word in _ABBREVIATED_STOPWORDS)
            words.append(word if content else None)
    found: dict[str, tuple[str, ...]] = {}
    for size in (2, 3):
        for start in range(len(words) - size + 1):
            run = words[start:start + size]
            if all(run):
                found.setdefault("".join(w[0] for w in run if w), tuple(w for w in run if w))
    return found
