"""path_word_boost finds a question's words in each candidate path by the prefixes of the path's
names (_WordsMatching): the same words as trying each word against each name (_word_matches),
checked on every path of this repository against words that exercise each way of matching."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.search.scoring import _stem_words, _word_matches, _WordsMatching

REPO = Path(__file__).resolve().parents[2]
# exact names (`py`, two letters), words a name starts (`sco`), words that start with a name
# (`searching`, `indexes`), two-letter prefixes that must not match (`st`), and misses
WORDS = ["py", "sco", "scoring", "searching", "search", "indexes", "st", "lex", "lexical", "tests", "t",
         "qmd", "daemon", "stor", "storage", "zzz", "ab", "init", "__init__", "conftest", "bench", "scaled"]


def test_words_matching_finds_the_words_word_matches_finds() -> None:
    paths = sorted(str(p.relative_to(REPO)) for p in REPO.rglob("*.py") if ".venv" not in p.parts)
    assert len(paths) > 100
    matching = _WordsMatching(WORDS)
    matched_any = 0
    for path in paths:
        names = _stem_words(path)
        expected = {w for w in WORDS if _word_matches(w, names)}
        assert matching.matched(names) == expected, path
        matched_any += bool(expected)
    assert matched_any > 50
