"""Chinese, Japanese and Korean text puts no spaces between words, so FTS5's unicode61 tokenizer
keeps a whole run (`建立数据库连接池`) as one token, and a query word matched only that exact run.
The index and the query therefore also carry each run's overlapping character pairs (`数据 据库
库连 连接`): the bigram scheme of Lucene's CJKAnalyzer, so BM25 ranks chunks by the pairs they
share with the question. Latin glued to a run in one token (`返回JSON格式`) is added as a word of
its own."""

from __future__ import annotations

import re

# Hiragana, Katakana, CJK ideographs (and extension A, compatibility forms), Hangul syllables,
# half-width Katakana
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_TOKEN = re.compile(r"\w+")


def run_pairs(text: str) -> list[list[str]]:
    """For each CJK run of two or more characters in TEXT, its overlapping character pairs."""
    return [[run[i : i + 2] for i in range(len(run) - 1)] for run in _CJK_RUN.findall(text) if len(run) > 1]


def cjk_bigrams(text: str) -> list[str]:
    """The pairs of every CJK run in TEXT, in order."""
    return [pair for pairs in run_pairs(text) for pair in pairs]


def without_cjk(text: str) -> list[str]:
    """What is left of TEXT between its CJK runs (`json数据` -> `json`)."""
    return _CJK_RUN.sub(" ", text).split()


def glued_words(text: str) -> list[str]:
    """The non-CJK pieces of tokens that mix them with CJK (`返回JSON格式的数据` -> `JSON`): the
    tokenizer indexes such a token whole, so `JSON` alone would not find it."""
    mixed = (t for t in _TOKEN.findall(text) if _CJK_RUN.search(t))  # linear, unlike \w*[CJK]\w*
    return [piece for token in mixed for piece in without_cjk(token)]
