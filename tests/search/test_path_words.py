"""A question's words against names (path_word_boost, name_words_boost) are matched through their
prefixes (WordsMatching): the same answers as trying each word against each name, the rule as it
was written before, checked on every path and name part of this repository against words that
exercise each way of matching."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.search.scoring import _path_words
from qmd_daemon.search.word_match import WordsMatching, name_parts

REPO = Path(__file__).resolve().parents[2]
# exact names (`py`, two letters), words a name starts (`sco`), words that start with a name
# (`searching`, `indexes`), two-letter prefixes that must not match (`st`), and misses
WORDS = ["py", "sco", "scoring", "searching", "search", "indexes", "st", "lex", "lexical", "tests", "t",
         "qmd", "daemon", "stor", "storage", "zzz", "ab", "init", "__init__", "conftest", "bench", "scaled",
         "word", "words", "matching", "path", "pat", "names"]


def word_matches(word: str, names: set[str] | frozenset[str]) -> bool:
    """The rule one pair at a time (scoring's _word_matches before _WordsMatching)."""
    if word in names:
        return True
    if len(word) < 3:
        return False
    return any(n.startswith(word) or (len(n) >= 3 and word.startswith(n)) for n in names)


def test_the_words_matching_a_path_are_those_the_pairwise_rule_finds() -> None:
    paths = sorted(str(p.relative_to(REPO)) for p in REPO.rglob("*.py") if ".venv" not in p.parts)
    assert len(paths) > 100
    matching = WordsMatching(WORDS)
    matched_any = 0
    for path in paths:
        names = _path_words(path)
        expected = {w for w in WORDS if word_matches(w, names)}
        assert matching.matched(names) == expected, path
        matched_any += bool(expected)
    assert matched_any > 50


def test_a_name_part_is_said_when_the_pairwise_rule_says_so() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "qmd_daemon").rglob("*.py"))
    parts = {part for name in set(text.replace("(", " ").split()) for part in name_parts(name)}
    assert len(parts) > 300
    matching, words = WordsMatching(WORDS), set(WORDS)
    said = {part for part in parts if matching.says(part)}
    assert said == {part for part in parts if word_matches(part, words)}
    assert 20 < len(said) < len(parts)
