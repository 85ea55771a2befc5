"""Understanding what was asked: typed lines, phrases, exclusions, identifiers, plain words."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from qmd_daemon.search.report import Report, read_report
from qmd_daemon.text.cjk import cjk_bigrams, without_cjk
from qmd_daemon.text.identifiers import looks_like_symbol, split_identifier

STOPWORDS = frozenset(
    """
    a an and are as at be but by can could do does did done for from had has have how i if in into
    is it its me my of on or our should so than that the their them then there these this those to
    too via was we were what when where which while who whom why will with would you your use used
    uses using get gets implemented implement implementation happen happens handle handled handles
    work works working code file files show way ways thing things does
    """.split()
)
# Words every pasted snippet or session has (`from x import y`, `In [3]:`): not what it is about.
CODE_NOISE = frozenset("import from in out self true false none def return print py python".split())
_TYPED = re.compile(r"^\s*(lex|vec|hyde|intent)\s*:\s*(.*)$", re.IGNORECASE)
_PHRASE = re.compile(r'"([^"]+)"')
_EXCLUDE = re.compile(r"(?:^|\s)-([^\W\d][\w.-]*)")
# `path:src/`, `-path:tests/` (GitHub's and Sourcegraph's syntax): a --path pattern written in the
# question, `-` for an exclusion (search/path_filter.py)
_PATH_FILTER = re.compile(r"(?<!\S)(-?)path:(\S+)")
# words in any script (`café`, `Größe`, `ошибка`, `हिन्दी`: the FTS tokenizer indexes them whole),
# identifiers with their dotted or `::` paths; both run over `_letters_for_marks(text)`
_WORD = re.compile(r"[^\W\d]\w*(?:(?:\.|::)[^\W\d]\w*)*")
# A letter joined to a word by a hyphen (k-means, e-mail, b-tree, z-index, x-axis) is one
# identifier in code (KMeans, email, BTree, zIndex, xAxis), and the letter alone is no term: the
# question kept only `means`, which the stemmer matched to every `np.mean`. Read as the compound
# `kMeans`: the whole token or both parts, as any compound identifier (in a question: see parse_query)
_LETTER_COMPOUND = re.compile(r"(?<![\w-])([^\W\d_])-([^\W\d_])([^\W\d_]+)(?![\w-])")
# A question that is one kebab-case name (`wrap-params`, `run-jetty`, `valid-secret-key?`) asks for
# that name where the searched code defines it (pipeline.mark_defined_word): Lisp-family code
# (Clojure, Common Lisp, Scheme, Emacs Lisp) names functions so, and the definitions table holds
# them whole; elsewhere `thread-safe` is English. Parts of two letters or more: `k-means` is the above;
# two hyphens join a package to its private name in Emacs Lisp (`magit--refresh-buffer`).
KEBAB_NAME = re.compile(r"[^\W\d_][^\W_]+(?:--?[^\W_]{2,})+[?!*]?")


def _letter_compounds_joined(text: str) -> str:
    return _LETTER_COMPOUND.sub(lambda m: m.group(1) + m.group(2).upper() + m.group(3), text)
MAX_TERMS = 40
MAX_QUESTION_TERMS = 10  # past it a bug report (every report of the sets has 12+), not a question
MODEL_TEXT_CHARS = 600  # what models see of a long query (bug reports, logs): see condense()
# How much of a query is analysed at all: a pasted log or a minified blob (normal agent input, up
# to the daemon's 1 MB body) costs what 32,000 characters cost (every eval bug report is shorter,
# bench/long_query.py's too). Past it: bounded_query().
MAX_QUERY_CHARS = 32_000
MAX_TAIL_LINES = 20  # error lines kept from past the head of an over-long query
MAX_PHRASES = 8  # each is a phrase scan in FTS5
MAX_EXCLUDES = 16
MAX_TYPED_LINES = 6  # per kind (lex, vec, hyde): each is a search (vec, hyde: an embedding)
_ERROR_LINE = re.compile(r"(?:Error|Exception|Traceback|Warning|error:|failed|panic|assert)", re.IGNORECASE)
# A path with an extension (`src/a.py`, `C:\x\b.rs`). The look-behind starts a match only where a
# run of path characters starts, and the possessive `*+` never backtracks into it: linear. Without
# them every position of a long word run rescanned it to its end (`'a'*20000`: 6 s in C, GIL held).
_PATH = re.compile(r"(?<![\w./\\-])[\w.-]*+[/\\][\w./\\-]+\.\w{1,5}")


@dataclass
class ParsedQuery:
    raw: str
    text: str  # the question in words, typed lines and syntax removed
    terms: list[str] = field(default_factory=list)  # search words as typed, stopwords removed
    parts: list[str] = field(default_factory=list)  # lowercased parts of compound terms
    phrases: list[str] = field(default_factory=list)
    excludes: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # path patterns written in it (`path:src/`)
    symbols: list[str] = field(default_factory=list)  # identifiers as typed (ClientSession, _request)
    # a bare lower-case word the searched code defines as spelled (`linprm`, `stream`): a symbol,
    # though it looks like a word; set by the search once it has asked the index (pipeline.py)
    defined_word: bool = False
    lex: list[str] = field(default_factory=list)
    vec: list[str] = field(default_factory=list)
    hyde: list[str] = field(default_factory=list)
    intent: str = ""  # what the asker is after (`intent:`): steers the reranker and the snippets
    model_text: str = ""  # the question as the models get it: condensed when long
    report: Report = field(default_factory=Report)  # stack frames, error messages, code shown

    @property
    def rerank_text(self) -> str:
        """The reranker's query: the question, then the intent, which judges relevance without
        adding a term to the BM25 match."""
        return f"{self.model_text}\nIntent: {self.intent}" if self.intent else self.model_text

    @property
    def is_long(self) -> bool:
        """A bug report or a pasted log rather than a question: longer, as sent, than what the
        models see whole (its words alone may be shorter: code blocks and tracebacks are not words)."""
        return len(self.raw) > MODEL_TEXT_CHARS

    @property
    def is_symbol_query(self) -> bool:
        """A bare identifier (or two): lean lexical and boost definitions."""
        if self.defined_word:
            return True
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


def bounded_query(raw: str, limit: int = MAX_QUERY_CHARS) -> str:
    """What of a query is analysed: all of it up to `limit` characters; past that its head (the
    title and first lines of a report, where the question is), then from the rest the first
    error lines and the last lines naming a path (a traceback's innermost frames), MAX_TAIL_LINES
    of each, cut to 160 characters. Every later step is then bounded whatever an agent pastes."""
    if len(raw) <= limit:
        return raw
    head = raw[: limit - 2 * MAX_TAIL_LINES * 161]
    cut = head.rfind("\n")
    if cut > len(head) // 2:
        head = head[:cut]  # the last whole line
    errors: dict[str, None] = {}
    paths: dict[str, None] = {}
    for line in raw[len(head) :].splitlines():
        start = line[:1000]  # not the whole of a minified line: a regex call holds the GIL
        if len(errors) < MAX_TAIL_LINES and _ERROR_LINE.search(start):
            errors.setdefault(start.strip()[:160], None)
        elif _PATH.search(start):
            paths.pop(start.strip()[:160], None)
            paths[start.strip()[:160]] = None
    last_paths = list(paths)[-MAX_TAIL_LINES:]
    return "\n".join([head, *(ln for ln in dict.fromkeys([*errors, *last_paths]))])


def condense(text: str, limit: int = MODEL_TEXT_CHARS) -> str:
    """A long query (a whole bug report) cut to what locates code: its first line (the title),
    error lines, then file paths and identifiers, within `limit` characters. The models then cost
    the same for a 20,000-character report as for a question, and lose little: an embedder or a
    reranker reads a few hundred tokens of a query at most anyway."""
    if len(text) <= limit:
        return " ".join(text.split())
    text = bounded_query(text)
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
    raw = bounded_query(raw)
    parsed.report = read_report(raw)
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
        elif len(getattr(parsed, kind)) < MAX_TYPED_LINES:
            getattr(parsed, kind).append(body)
    text = " ".join(" ".join(plain_lines).split())
    if not parsed.is_long:  # a question; a pasted log's `path:/usr/lib` is no filter
        parsed.paths = [("!" if m.group(1) else "") + m.group(2) for m in _PATH_FILTER.finditer(text)]
        text = " ".join(_PATH_FILTER.sub(" ", text).split())
    parsed.phrases = [p.strip() for p in _PHRASE.findall(text) if p.strip()][:MAX_PHRASES]
    text_wo_phrases = _PHRASE.sub(" ", text)
    excluded = list(_EXCLUDE.finditer(_letters_for_marks(text_wo_phrases)))
    excludes = (text_wo_phrases[m.start(1) : m.end(1)].lower() for m in excluded)
    parsed.excludes = list(dict.fromkeys(excludes))[:MAX_EXCLUDES]
    kept = [0, *(i for m in excluded for i in (m.start(), m.end())), len(text_wo_phrases)]
    positive = " ".join(text_wo_phrases[a:b] for a, b in zip(kept[::2], kept[1::2], strict=True))
    parsed.text = " ".join((positive + " " + " ".join(parsed.phrases)).split())
    if not parsed.text:
        parsed.model_text = condense(raw)
    elif len(parsed.text) > MODEL_TEXT_CHARS:
        parsed.model_text = condense("\n".join(plain_lines))
    else:
        parsed.model_text = parsed.text
    lex_words = [w for lex in parsed.lex for w in _words(lex)]
    words = _words(positive) + lex_words
    if not words and not parsed.phrases:
        words = [w for v in parsed.vec + parsed.hyde for w in _words(v)]
    parsed.symbols = list(dict.fromkeys(w for w in words if looks_like_symbol(w)))[:MAX_TERMS]
    # terms only: `k-means` names no symbol; and a question's only: a bug report's compound
    # identifiers lead its terms (_report_terms), and its prose `x-axes` is no name it gave
    if not parsed.is_long and _LETTER_COMPOUND.search(positive):
        words = _words(_letter_compounds_joined(positive)) + lex_words
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
        ordered = _report_terms(ordered, parsed.report, plain_lines)
    parsed.terms = ordered
    parts: dict[str, None] = {}
    for term in ordered:
        for part in split_identifier(term):
            if len(part) > 2 and part not in STOPWORDS:
                parts.setdefault(part, None)
    parsed.parts = list(parts)
    return parsed


def _report_terms(terms: list[str], report: Report, lines: list[str]) -> list[str]:
    """MAX_TERMS of a long bug report's terms, read as an engineer reads it: the functions its
    stack frames name and the compound identifiers first, then the words of the code it shows,
    then its title and error messages, then the prose, each in the order written."""
    frame_words = {f.function.lower() for f in report.frames}
    code_words = {w.lower() for w in _words(report.code)}
    title = next((ln for ln in lines if ln.strip()), "")
    headline = {w.lower() for w in _words(" ".join([title, *report.errors]))}

    def tier(term: str) -> int:
        low = term.lower()
        if low in frame_words or split_identifier(term):
            return 0
        if low in code_words and low not in CODE_NOISE:
            return 1
        return 2 if low in headline else 3

    return sorted(terms, key=tier)[:MAX_TERMS]


def content_words(parsed: ParsedQuery) -> list[str]:
    """Lowercased words for path and name matching: the terms and the parts of compound ones."""
    return list(dict.fromkeys([t.lower() for t in parsed.terms] + parsed.parts))


def snippet_words(parsed: ParsedQuery) -> list[str]:
    """The words a snippet window is chosen by: the content words, then the intent's own words
    (stopwords dropped), so `intent:` picks which lines of a hit are shown."""
    intent = [w.lower() for w in _words(parsed.intent) if w.lower() not in STOPWORDS]
    return list(dict.fromkeys(content_words(parsed) + intent[:MAX_TERMS]))
