"""Chinese, Japanese and Korean text puts no spaces between words, so FTS5's unicode61 tokenizer
keeps a whole run (`建立数据库连接池`) as one token, and a query word matched only that exact run.
The index and the query therefore also carry each run's overlapping character pairs (`数据 据库
库连 连接`): the bigram scheme of Lucene's CJKAnalyzer, so BM25 ranks chunks by the pairs they
share with the question."""

from __future__ import annotations

import re

# Hiragana, Katakana, CJK ideographs (and extension A, compatibility forms), Hangul syllables,
# half-width Katakana
_CJK_RUN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+")


def cjk_bigrams(text: str) -> list[str]:
    """The overlapping character pairs of every CJK run of two or more characters in TEXT."""
    return [run[i : i + 2] for run in _CJK_RUN.findall(text) for i in range(len(run) - 1)]


def without_cjk(text: str) -> list[str]:
    """What is left of TEXT between its CJK runs (`json数据` -> `json`)."""
    return _CJK_RUN.sub(" ", text).split()
