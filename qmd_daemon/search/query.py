"""Understanding what was asked: typed lines, phrases, exclusions, identifiers, plain words."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from qmd_daemon.ingest.cjk import cjk_bigrams, without_cjk
from qmd_daemon.ingest.identifiers import looks_like_symbol, split_identifier

STOPWORDS = frozenset(
    """
    a an and are as at be but by can could do does did done for from had has have how i if in into
    is it its me my of on or our should so than that the their them then there these this those to
    too via was we were what when where which while who whom why will with would you your use used
    uses using get gets implemented implement implementation happen happens handle handled handles
    work works working code file files find show way ways thing things does
    """.split()
)
_TYPED = re.compile(r"^\s*(lex|vec|hyde|intent)\s*:\s*(.*)$", re.IGNORECASE)
_PHRASE = re.compile(r'"([^"]+)"')
_EXCLUDE = re.compile(r"(?:^|\s)-([^\W\d][\w.-]*)")
# words in any script (`café`, `Größe`, `ошибка`, `हिन्दी`: the FTS tokenizer indexes them whole),
# identifiers with their dotted or `::` paths; both run over `_letters_for_marks(text)`
_WORD = re.compile(r"[^\W\d]\w*(?:(?:\.|::)[^\W\d]\w*)*")
MAX_TERMS = 40
MODEL_TEXT_CHARS = 600  # what models see of a long query (bug reports, logs): see condense()
_ERROR_LINE = re.compile(r"(?:Error|Exception|Traceback|Warning|error:|failed|panic|assert)", re.IGNORECASE)
_PATH = re.compile(r"[\w.-]*[/\\][\w./\\-]+\.\w{1,5}")


@dataclass
class ParsedQuery:
    raw: str
    text: str  # the question in words, typed lines and syntax removed
    terms: list[str] = field(default_factory=list)  # search words as typed, stopwords removed
    parts: list[str] = field(default_factory=list)  # lowercased parts of compound terms
    phrases: list[str] = field(default_factory=list)
    excludes: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)  # identifiers as typed (ClientSession, _request)
    lex: list[str] = field(default_factory=list)
    vec: list[str] = field(default_factory=list)
    hyde: list[str] = field(default_factory=list)
    intent: str = ""
    model_text: str = ""  # the question as the models get it: condensed when long

    @property
    def is_symbol_query(self) -> bool:
        """A bare identifier (or two): lean lexical and boost definitions."""
        words = self.text.split()
        return bool(self.symbols) and len(words) <= 2 and all(looks_like_symbol(w) for w in words)


class _MarksAsLetters(dict[int, int]):
    r"""A `str.translate` table, filled as characters come: a combining mark reads as a letter.
    Python's `\w` leaves out marks (the vowel signs of Devanagari, Thai, Arabic...), which would cut
    `हिन्दी` into single letters; FTS5 keeps it whole. The translation keeps every offset."""

    def __missing__(self, code: int) -> int:
        value = ord("a") if unicodedata.category(chr(code)).startswith("M") else code
        self[code] = value
        return value


_MARKS_AS_LETTERS = _MarksAsLetters()


def _letters_for_marks(text: str) -> str:
    return text if text.isascii() else text.translate(_MARKS_AS_LETTERS)


def _words(text: str) -> list[str]:
    return [text[m.start() : m.end()] for m in _WORD.finditer(_letters_for_marks(text))]


def condense(text: str, limit: int = MODEL_TEXT_CHARS) -> str:
    """A long query (a whole bug report) cut to what locates code: its first line (the title),
    error lines, then file paths and identifiers, within `limit` characters. The models then cost
    the same for a 20,000-character report as for a question, and lose little: an embedder or a
    reranker reads a few hundred tokens of a query at most anyway."""
    if len(text) <= limit:
        return " ".join(text.split())
    lines = [" ".join(ln.split()) for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        return ""
    kept = [lines[0][:200]]
    errors = [ln[:160] for ln in lines[1:] if _ERROR_LINE.search(ln)]
    kept += list(dict.fromkeys(errors))[:3]
    anchors = _PATH.findall(text) + [w for w in _words(text) if split_identifier(w)]  # compound names
    kept.append(" ".join(dict.fromkeys(anchors)))
    return "\n".join(kept)[:limit].strip()


def parse_query(raw: str) -> ParsedQuery:
    parsed = ParsedQuery(raw=raw, text="")
    plain_lines: list[str] = []
    for line in raw.splitlines() or [raw]:
        typed = _TYPED.match(line)
        if not typed:
            plain_lines.append(line)
            continue
        kind, body = typed.group(1).lower(), typed.group(2).strip()
        if not body:
            continue
        if kind == "intent":
            parsed.intent = body
        else:
            getattr(parsed, kind).append(body)
    text = " ".join(" ".join(plain_lines).split())
    parsed.phrases = [p.strip() for p in _PHRASE.findall(text) if p.strip()]
    text_wo_phrases = _PHRASE.sub(" ", text)
    excluded = list(_EXCLUDE.finditer(_letters_for_marks(text_wo_phrases)))
    parsed.excludes = [text_wo_phrases[m.start(1) : m.end(1)].lower() for m in excluded]
    positive = text_wo_phrases
    for m in reversed(excluded):
        positive = positive[: m.start()] + " " + positive[m.end() :]
    parsed.text = " ".join((positive + " " + " ".join(parsed.phrases)).split())
    if not parsed.text:
        parsed.model_text = condense(raw)
    elif len(parsed.text) > MODEL_TEXT_CHARS:
        parsed.model_text = condense("\n".join(plain_lines))
    else:
        parsed.model_text = parsed.text
    words = _words(positive) + [w for lex in parsed.lex for w in _words(lex)]
    if not words and not parsed.phrases:
        words = [w for v in parsed.vec + parsed.hyde for w in _words(v)]
    parsed.symbols = list(dict.fromkeys(w for w in words if looks_like_symbol(w)))
    terms: dict[str, str] = {}
    for word in words:
        for piece in re.split(r"\.|::", word):
            pairs = cjk_bigrams(piece)  # a CJK run is searched by its character pairs
            for part in [*without_cjk(piece), *pairs] if pairs else [piece]:
                low = part.lower()
                if len(low) < 2 or low in STOPWORDS:
                    continue
                terms.setdefault(low, part)
    ordered = list(terms.values())
    if len(ordered) > MAX_TERMS:
        # Long bug reports: keep identifiers first (they pin code), then the earliest words.
        idents = [t for t in ordered if split_identifier(t)]
        ordered = list(dict.fromkeys(idents + ordered))[:MAX_TERMS]
    parsed.terms = ordered
    parts: dict[str, None] = {}
    for term in ordered:
        for part in split_identifier(term):
            if len(part) > 2 and part not in STOPWORDS:
                parts.setdefault(part, None)
    parsed.parts = list(parts)
    return parsed


def content_words(parsed: ParsedQuery) -> list[str]:
    """Lowercased words for path and name matching: the terms and the parts of compound ones."""
    return list(dict.fromkeys([t.lower() for t in parsed.terms] + parsed.parts))
