"""Line-based chunking: shared helpers (line splitting, size caps, windows) and the regex fallback.

Every chunker in this package works on the same model: the file is split into lines (on "\\n",
a trailing "\\r" dropped), structure decides *pieces* (row ranges, 0-based inclusive, with a
heading and a context signature), and `pieces_to_chunks` turns pieces into `Chunk`s, cutting any
piece over the caps into overlapping windows and any single enormous line by characters.

The fallback itself (`chunk_fallback`) is for languages without a tree-sitter grammar: it breaks
at lines that look like definitions at indentation 0, splits a large definition at its own
less-indented inner definitions (like a class into methods), merges small neighbours, and caps.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from qmd_daemon.file_types import STYLESHEET_LANGUAGES, TEMPLATE_LANGUAGES
from qmd_daemon.text.chunk_model import Chunk, Definition

# Default caps shared by every chunker, chosen on the dev eval (bench/retrieval.py --profile small,
# root scope): 40 lines / 1200 chars gave NDCG@10 lexical 0.814, hybrid 0.839 against 0.798 and
# 0.823 for 70 / 2400 (a 256-token embedder then sees most of each chunk).
MAX_LINES = 40
MAX_CHARS = 1200
OVERLAP_LINES = 3
MAX_SIGNATURE_LINES = 5
MAX_SIGNATURE_CHARS = 160
MAX_SIGNATURE_TOTAL = 600


@dataclass(frozen=True)
class Caps:
    """Size limits of one chunk: lines, characters, and the overlap between windows."""

    max_lines: int = MAX_LINES
    max_chars: int = MAX_CHARS
    overlap: int = OVERLAP_LINES

    def normalized(self) -> Caps:
        max_lines = max(1, int(self.max_lines))
        max_chars = max(16, int(self.max_chars))
        overlap = max(0, min(int(self.overlap), max_lines // 2))
        return Caps(max_lines, max_chars, overlap)


# ---------------------------------------------------------------------------------------------
# lines and sizes


def split_lines(text: str) -> list[str]:
    """The file's lines as chunk text uses them: split on "\\n", a trailing "\\r" dropped.

    A file that uses lone "\\r" as its line separator (old Mac) is split on "\\r".
    """
    if "\n" not in text and "\r" in text:
        text = text.replace("\r", "\n")
    lines = text.split("\n")
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    return lines


class LineIndex:
    """Prefix sums of line lengths: the characters of any row range in O(1)."""

    __slots__ = ("lines", "prefix", "blank")

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.prefix = list(accumulate(map(len, lines), lambda total, n: total + n + 1, initial=0))
        self.blank = [not line or line.isspace() for line in lines]

    def __len__(self) -> int:
        return len(self.lines)

    def chars(self, start: int, end: int) -> int:
        if end < start:
            return 0
        return self.prefix[end + 1] - self.prefix[start] - 1

    def fits(self, start: int, end: int, caps: Caps) -> bool:
        return end - start + 1 <= caps.max_lines and self.chars(start, end) <= caps.max_chars


# ---------------------------------------------------------------------------------------------
# pieces, units, grouping


class Lazy:
    """A signature computed on first use (most definitions never reach a chunk's signature)."""

    __slots__ = ("_fn", "_args", "_value")

    def __init__(self, fn: Callable[..., str], *args: object):
        self._fn = fn
        self._args = args
        self._value: str | None = None

    def get(self) -> str:
        if self._value is None:
            try:
                self._value = self._fn(*self._args)
            except Exception:
                self._value = ""
            self._fn = None  # type: ignore[assignment]
            self._args = ()
        return self._value


def resolve(sig: str | Lazy | None) -> str:
    if sig is None:
        return ""
    return sig if isinstance(sig, str) else sig.get()


@dataclass
class Piece:
    """Rows start..end (0-based, inclusive) that should become one chunk (or windows of one)."""

    start: int
    end: int
    heading: str = ""
    context: str | Lazy = ""  # signature of the definition this piece is part of (continuation windows)
    context_row: int = -1  # the row of that definition, -1 if none
    context_label: str = ""  # "kind name" of that definition: the heading level of its continuations


@dataclass
class Unit:
    """A structural unit at one level: rows start..end; a definition or filler (imports...)."""

    start: int
    end: int
    is_def: bool = False
    context: str | Lazy = ""
    context_row: int = -1
    context_label: str = ""
    heading: str | None = None  # the unit's own heading (markdown/rst sections), else the level's
    trailing: bool = False  # lines after a definition's closing line: they join a group, never start one
    # a documentation section among code (Perl's POD `=head2 run`): grouped only with sections, so
    # a chunk of code does not take a section's title, nor a section the code's
    titled: bool = False
    # splits the unit (rows start..end, possibly extended upwards) into finer pieces when too big
    split: Callable[[int, int], list[Piece]] | None = None


def make_units(starts: Sequence[tuple[int, bool, object]], lo: int, hi: int) -> list[tuple[int, int, object]]:
    """Turn (start_row, is_def, payload) in order into a partition of lo..hi: (start, end, payload).

    Starts are clamped to lo..hi; a start not after the previous one joins the previous unit.
    The first unit always starts at lo, the last ends at hi, so every row is covered once.
    """
    out: list[list] = []
    for start, is_def, payload in starts:
        start = max(lo, min(start, hi))
        if not out:
            if start > lo:
                out.append([lo, None])
            out.append([start, payload])
        elif start > out[-1][0]:
            out.append([start, payload])
        elif is_def and out[-1][1] is None:
            out[-1][1] = payload  # same row as the previous unit: keep the definition
    if not out:
        return [(lo, hi, None)]
    result: list[tuple[int, int, object]] = []
    for i, (start, payload) in enumerate(out):
        end = out[i + 1][0] - 1 if i + 1 < len(out) else hi
        result.append((start, end, payload))
    return result


def group_units(units: list[Unit], index: LineIndex, caps: Caps, heading: str) -> list[Piece]:
    """Merge adjacent small units up to the caps; let a big unit split itself (or stay whole).

    Leading filler (module docstring, imports, comments) right before a big definition is glued to
    that definition's first piece when it is small, so it is not left alone in a tiny chunk.
    """
    pieces: list[Piece] = []
    group: list[Unit] = []

    def flush() -> None:
        if group:
            only = group[0] if len(group) == 1 else None
            own = [u.heading for u in group if u.heading]
            # sections of documentation with no title in common (`NAME`, `METHODS > run`) are
            # headed as the level is: the first one's title would claim the others
            title = (common_heading(own, first_if_none=not group[0].titled) or heading) if own else heading
            pieces.append(
                Piece(
                    group[0].start,
                    group[-1].end,
                    title,
                    only.context if only else "",
                    only.context_row if only else -1,
                    only.context_label if only else "",
                )
            )
            group.clear()

    for unit in units:
        if unit.is_def and group and group[0].trailing:
            flush()  # a group of a closed definition's trailing lines does not take the next one
        if group and group[0].titled != unit.titled:
            flush()
        if index.fits(unit.start, unit.end, caps):
            if group and not index.fits(group[0].start, unit.end, caps):
                flush()
            group.append(unit)
            continue
        start = unit.start
        if (
            group
            and not unit.titled  # a section's title would claim the sections glued to it
            and not any(u.is_def for u in group)
            and index.fits(group[0].start, group[-1].end, Caps(caps.max_lines // 2, caps.max_chars // 2))
        ):
            start = group[0].start
            group.clear()
        flush()
        if unit.split is not None:
            pieces.extend(unit.split(start, unit.end))
        else:
            pieces.append(Piece(start, unit.end, heading, unit.context, unit.context_row, unit.context_label))
    flush()
    return pieces


def common_heading(headings: list[str], *, first_if_none: bool = True) -> str:
    """The common ancestor of heading paths ("A > B", "A > C" -> "A"), else the first one (or
    "" when not `first_if_none`)."""
    parts = [h.split(" > ") for h in headings]
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if any(p != level[0] for p in level):
            break
        common.append(level[0])
    return " > ".join(common) if common else (headings[0] if first_if_none else "")


# ---------------------------------------------------------------------------------------------
# windows and chunks


def windows(index: LineIndex, start: int, end: int, caps: Caps) -> list[tuple[int, int]]:
    """Cover rows start..end with windows within the caps, overlapping by a few lines.

    Windows are balanced in lines and prefer to end at a blank line. A single line longer than
    the char cap becomes a window of its own (cut by characters later).
    """
    if end < start:
        return []
    if index.fits(start, end, caps):
        return [(start, end)]
    total = end - start + 1
    overlap = caps.overlap
    step = max(1, caps.max_lines - overlap)
    count = max(1, -(-max(0, total - overlap) // step))
    target = min(caps.max_lines, -(-(total + (count - 1) * overlap) // count))
    out: list[tuple[int, int]] = []
    s = start
    prefix = index.prefix
    blank = index.blank
    while s <= end:
        e = min(end, s + target - 1)
        if prefix[e + 1] - prefix[s] - 1 > caps.max_chars:
            # the last row whose range from s fits the char cap (s itself at least)
            e = max(s, bisect_right(prefix, prefix[s] + caps.max_chars + 1, s, e + 2) - 2)
        if e < end and e > s:
            floor = s + (e - s) * 3 // 5
            for b in range(e, floor, -1):
                if blank[b] and not blank[b - 1]:
                    e = b
                    break
        out.append((s, e))
        if e >= end:
            break
        ov = min(overlap, e - s)
        # no overlap worth its size: the overlap plus the next line must leave room
        while ov > 0 and index.chars(e + 1 - ov, e + 1) > caps.max_chars // 2:
            ov -= 1
        s = e + 1 - ov
    return out


def _trim(index: LineIndex, start: int, end: int) -> tuple[int, int]:
    blank = index.blank
    while start <= end and blank[start]:
        start += 1
    while end >= start and blank[end]:
        end -= 1
    return start, end


@dataclass
class DefTable:
    """Definitions of a file sorted by row, with the signature line of each."""

    rows: list[int] = field(default_factory=list)
    defs: list[Definition] = field(default_factory=list)
    sigs: list[str | Lazy] = field(default_factory=list)

    def add(self, row: int, definition: Definition, sig: str | Lazy) -> None:
        self.rows.append(row)
        self.defs.append(definition)
        self.sigs.append(sig)

    def sort(self) -> None:
        order = sorted(range(len(self.rows)), key=lambda i: (self.rows[i], i))
        self.rows = [self.rows[i] for i in order]
        self.defs = [self.defs[i] for i in order]
        self.sigs = [self.sigs[i] for i in order]

    def between(self, start: int, end: int) -> range:
        return range(bisect_left(self.rows, start), bisect_right(self.rows, end))


def clip_signature(line: str) -> str:
    line = " ".join(line.split())
    if len(line) > MAX_SIGNATURE_CHARS:
        line = line[: MAX_SIGNATURE_CHARS - 3].rstrip() + "..."
    return line


def pieces_to_chunks(
    index: LineIndex,
    pieces: list[Piece],
    table: DefTable,
    caps: Caps,
    *,
    with_signature: bool = True,
) -> list[Chunk]:
    """Window every piece to the caps, trim blank edges, attach definitions and signatures."""
    chunks: list[Chunk] = []
    lines = index.lines
    last: tuple[int, int] | None = None
    for piece in pieces:
        for ws, we in windows(index, piece.start, piece.end, caps):
            s, e = _trim(index, ws, we)
            if s > e or (s, e) == last:
                continue
            last = (s, e)
            span = table.between(s, e)
            definitions = [table.defs[i] for i in span]
            continuation = piece.context_row >= 0 and not (s <= piece.context_row <= e)
            heading = piece.heading
            if continuation and piece.context_label:
                # lines inside a definition that starts in an earlier window: its name is their
                # context, as a section title is for the paragraphs under it
                heading = f"{heading} > {piece.context_label}" if heading else piece.context_label
            signature = ""
            if with_signature:
                sigs: list[str] = []
                context = resolve(piece.context)
                if context and continuation:
                    sigs.append(context)
                for i in span:
                    sig = resolve(table.sigs[i])
                    if sig and sig not in sigs:
                        sigs.append(sig)
                    if len(sigs) >= MAX_SIGNATURE_LINES:
                        break
                signature = "\n".join(sigs[:MAX_SIGNATURE_LINES])[:MAX_SIGNATURE_TOTAL]
            if s == e and len(lines[s]) > caps.max_chars:
                line = lines[s]
                for off in range(0, len(line), caps.max_chars):
                    part = line[off : off + caps.max_chars]
                    if part.strip():
                        chunks.append(Chunk(s + 1, s + 1, part, list(definitions), signature, heading))
                continue
            text = "\n".join(lines[s : e + 1])
            chunks.append(Chunk(s + 1, e + 1, text, definitions, signature, heading))
    return chunks


def plain_chunks(text: str, caps: Caps | None = None) -> list[Chunk]:
    """Windows over the lines and nothing else: the last resort, it cannot fail on a str."""
    caps = (caps or Caps()).normalized()
    index = LineIndex(split_lines(text))
    return pieces_to_chunks(index, [Piece(0, len(index) - 1)], DefTable(), caps)


# ---------------------------------------------------------------------------------------------
# the regex / indentation fallback

_NAME = r"[A-Za-z_$][\w$.:!?']*"
# (pattern, kind): the name is group "name"; matched after the indentation is stripped.
_GENERIC_PATTERNS: list[tuple[str, str]] = [
    (rf"(?:(?:export|public|private|protected|internal|open|override|static|async|pub|inline|suspend|"
     rf"final|abstract|local|extern|tailrec|operator|infix|data|sealed|default)\s+)*"
     rf"(?:def|defp|func|fun|fn|function|sub|proc|procedure|method)\s+(?:\([^)]*\)\s*)?(?P<name>{_NAME})",
     "function"),
    (rf"(?:(?:export|public|private|protected|internal|open|static|abstract|final|sealed|data|case|"
     rf"inline|value|annotation|enum|pub)\s+)*"
     rf"(?:class|struct|interface|trait|protocol|object|record|union|extension|actor)\s+(?P<name>{_NAME})",
     "class"),
    (rf"(?:(?:export|public|pub)\s+)?enum\s+(?P<name>{_NAME})", "enum"),
    (rf"(?:defmodule|module|namespace|package|mod)\s+(?P<name>{_NAME})", "module"),
    (rf"(?:defmacro|defmacrop|macro|defguard)\s+(?P<name>{_NAME})", "macro"),
    (rf"(?:defstruct|defprotocol|defimpl|defrecord|deftype)\s+(?P<name>{_NAME})?", "struct"),
    (rf"(?:pub\s+)?const\s+(?P<name>{_NAME})\s*=\s*(?:struct|enum|union)\b", "struct"),
    (r"(?:typealias|type|newtype|data)\s+(?P<name>[A-Z][\w']*)", "type"),
    (r"instance\s+(?P<name>[^=]+?)\s+where\b", "type"),
    (rf"(?P<name>{_NAME})\s*(?:<-|=)\s*function\s*\(", "function"),  # R, Lua tables
    (rf"(?:local\s+)?(?P<name>{_NAME})\s*=\s*function\b", "function"),
    (r"(?:message|service|rpc|input|scalar|schema|query|mutation|subscription|fragment)\s+"
     rf"(?P<name>{_NAME})", "type"),
    (r"(?:resource|data|module|variable|output|provider)\s+\"(?P<name>[^\"]+)\"(?:\s+\"[^\"]+\")?",
     "resource"),
    (r"(?:locals|terraform)(?P<name>)\s*\{", "resource"),
    # SQL: a PostgreSQL extension's scripts name their schema `@extschema@` (CREATE EXTENSION
    # puts the real one there): `CREATE FUNCTION @extschema@.run_maintenance(` defines run_maintenance
    (r"(?i:create\s+(?:or\s+replace\s+)?(?:function|procedure|trigger)\s+(?:if\s+not\s+exists\s+)?)"
     r"(?:@\w+@\.)?(?P<name>[\w.\"`\[\]]+)", "function"),
    (r"(?i:create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+|unique\s+|materialized\s+)?"
     r"(?:table|view|index|type|schema|sequence)\s+"
     r"(?:if\s+not\s+exists\s+)?)(?:@\w+@\.)?(?P<name>[\w.\"`\[\]]+)", "table"),
    (r"(?:function|macro)\s*\(\s*(?P<name>[\w-]+)", "function"),  # cmake
    (r"(?P<name>[A-Za-z_][\w-]*)\s*\(\)\s*\{", "function"),  # shell
    (r"<(?P<name>template|script|style)\b[^>]*>", "section"),  # vue / svelte
    (r"(?P<name>[a-z_][\w']*)\s+::\s", "function"),  # haskell signature
]
_GENERIC_RE = [(re.compile(p), k) for p, k in _GENERIC_PATTERNS]
# A line can only match a pattern above if its first word is one of these, or if it has one of
# the _HINTS (cheap test before the regexes).
_FIRST_WORDS = frozenset(
    """export public private protected internal open override static async pub inline suspend final
    abstract local extern tailrec operator infix data sealed default def defp func fun fn function sub
    proc procedure method class struct interface trait protocol object record union extension actor case
    value annotation enum defmodule module namespace package mod defmacro defmacrop macro defguard
    defstruct defprotocol defimpl defrecord deftype const typealias type newtype instance message service
    rpc input scalar schema query mutation subscription fragment resource variable output provider locals
    terraform create CREATE Create""".split()  # noqa: SIM905
)
_HINTS = ("function", "()", " :: ", "<-")

# Definitions the patterns above miss, by language family: (pattern, kind, only at indentation
# 0; kind "": the line defines nothing). A family's patterns are tried first, on every line of its languages.
# Kind of a line that closes the definition above it (`endfunction`, `</script>`, Crystal's `end`):
# no definition; the lines after it, up to the next definition, are the level's own
_END = "end"
# Kinds declared on one line: what follows is not theirs (a GDScript script's `var`s after a
# `signal text_signal(text)` were headed by the signal; a Svelte script's code after its props)
_ONE_LINE_KINDS = frozenset({"signal", "property"})
# The line closing a SystemVerilog typedef's body with its name (`} ctrl_fsm_e;`, `} regs_t [4];`)
_TYPEDEF_CLOSE = r"\}}\s*{name}\s*(?:\[[^\]]*\]\s*)*;"
_LISP_HEAD = r"\((?:[\w.-]+/)?"  # `(defn`, `(cl:defun`, `(s/def`
# Clojure's metadata before a defined name: `(def ^:private x`, `(defn ^String f`,
# `(defprotocol ^{:added "1.6"} P` (the name is what follows it)
_LISP_META = r"(?:\^(?:\{[^{}]*\}|[^\s()\[\]{}]+)\s+)*"
_FAMILY_PATTERNS: dict[str, list[tuple[str, str, bool]]] = {
    "ml": [
        (r"(?:let|and)\s+(?:rec\s+)?(?:inline\s+|private\s+|mutable\s+)*(?P<name>[a-z_][\w']*)\b(?!.*\bin\s*$)",
         "function", False),
        (r"val\s+(?:mutable\s+|rec\s+)?(?P<name>[a-z_][\w']*)\s*[:=]", "function", False),
        (r"(?:type|and)\s+(?:'\w+\s+|\([^)]*\)\s+)?(?P<name>[A-Za-z_][\w']*)\b[^=]*=", "type", False),
        (r"module\s+(?:type\s+|rec\s+)?(?P<name>[A-Z][\w'.]*)", "module", False),
        # F#'s double-backtick names, most of them tests: ``let ``route: GET "/" returns 200`` () =``,
        # ``member _.``GET / returns 200`` () =`` (before `member`'s pattern, which named it `_`)
        (r"(?:let|(?:(?:static|abstract|override|default)\s+)*member\s+(?:\w+\.)?)\s*``(?P<name>[^`]+)``",
         "function", False),
        (r"(?:(?:static|abstract|override|default)\s+)*member\s+(?:\w+\.)?(?P<name>\w+)", "method", False),
        (r"exception\s+(?P<name>[A-Z]\w*)", "type", False),
    ],
    "elm": [
        (r"(?P<name>[a-z][\w']*)\s+:\s", "function", True),
        (r"type\s+(?:alias\s+)?(?P<name>[A-Z]\w*)", "type", True),
        (r"port\s+(?P<name>[a-z]\w*)", "function", True),
    ],
    "lisp": [
        (_LISP_HEAD + r"(?:defn-?|defun|define|defmethod|defmulti|defgeneric|defsubst|defcustom|fn)\s+"
         + _LISP_META + r"\(?(?P<name>[^\s()\[\]]+)", "function", False),
        (_LISP_HEAD + r"(?:defmacro|define-syntax|define-macro)\s+" + _LISP_META
         + r"\(?(?P<name>[^\s()\[\]]+)", "macro", False),
        (_LISP_HEAD + r"(?:defclass|defstruct|defrecord|deftype|defprotocol|definterface|define-record-type|"
         r"define-class|struct)\s+" + _LISP_META + r"\(?(?P<name>[^\s()\[\]]+)", "class", False),
        (_LISP_HEAD + r"(?:def|defonce|defvar|defparameter|defconst|defconstant|define-values)\s+"
         + _LISP_META + r"(?P<name>[^\s()\[\]]+)", "variable", False),
        # clojure.test's `(deftest name`, test.check's `(defspec name`
        (_LISP_HEAD + r"(?:deftest|defspec)\s+" + _LISP_META + r"(?P<name>[^\s()\[\]]+)", "test", False),
        (_LISP_HEAD + r"(?:ns|defpackage|define-module|module|in-package)\s+(?P<name>[^\s()\[\]]+)", "module",
         False),
    ],
    "erlang": [
        (r"-module\((?P<name>[\w@]+)\)", "module", True),
        (r"-record\((?P<name>\w+)", "struct", True),
        (r"-(?:type|opaque)\s+(?P<name>\w+)\(", "type", True),
        (r"-define\((?P<name>\w+)", "macro", True),
        (r"(?P<name>[a-z][\w@]*|'[^']+')\(", "function", True),  # a clause head at column 0
    ],
    "objc": [
        (r"[-+]\s*\([^)]*\)\s*(?P<name>\w+)", "method", False),
        (r"@(?:interface|implementation)\s+(?P<name>\w+)", "class", False),
        (r"@protocol\s+(?P<name>\w+)(?!\s*;)", "interface", False),
    ],
    # MATLAB/Octave: `function [a, b] = name(...)` names `name`, not its first output; methods are
    # functions inside a classdef's `methods` block, nested functions are indented too
    "matlab": [
        (r"function\s+(?:\[[^\]]*\]\s*=\s*|[A-Za-z]\w*\s*=\s*)?(?P<name>[A-Za-z][\w.]*)", "function", False),
        (r"classdef\s+(?:\([^)]*\)\s*)?(?P<name>[A-Za-z]\w*)", "class", True),
    ],
    # R: `name <- function(` anywhere (a local helper too), `name = function(` only at the top (inside
    # a call it is an argument: `tryCatch(error = function(e) ...)`); S4 and R6 classes by their
    # constructors; testthat's `test_that("...", {` blocks are tests
    "r": [
        (r"`?(?P<name>(?<=`)[^`]+(?=`)|[\w.]+)`?\s*(?:<<-|<-)\s*(?:function\b|\\\()", "function", False),
        (r"`?(?P<name>(?<=`)[^`]+(?=`)|[\w.]+)`?\s*=\s*(?:function\b|\\\()", "function", True),
        (r"(?P<name>[\w.]+)\s*(?:<-|=)\s*(?:R6::)?R6Class\(", "class", False),
        (r"set(?:Class|RefClass)\(\s*(?:Class\s*=\s*)?[\"'](?P<name>[^\"']+)", "class", False),
        (r"setGeneric\(\s*(?:name\s*=\s*)?[\"'](?P<name>[^\"']+)", "function", False),
        (r"setMethod\(\s*(?:f\s*=\s*)?[\"'](?P<name>[^\"']+)", "method", False),
        (r"test_that\(\s*[\"'](?P<name>[^\"']+)", "test", False),
    ],
    "vb": [
        (r"(?i:(?:(?:public|private|protected|friend|shared|overrides|overridable|mustoverride|notoverridable|"
         r"overloads|static|partial|async|iterator|readonly|writeonly|default|shadows)\s+)*"
         r"(?:sub|function|property|operator)\s+)(?P<name>\w+)", "function", False),
        (r"(?i:(?:(?:public|private|protected|friend|partial|mustinherit|notinheritable)\s+)*"
         r"(?:class|module|structure|interface|enum|namespace)\s+)(?P<name>[\w.]+)", "class", False),
    ],
    "fortran": [
        (r"(?i:(?:(?:pure|elemental|recursive|impure|module)\s+)*(?:(?:integer|real|double\s+precision|logical|"
         r"character|complex|type\s*\([^)]*\))(?:\s*\([^)]*\))?(?:\s*\*\s*\d+)?\s+)?(?:subroutine|function)\s+)"
         r"(?P<name>\w+)", "function", False),
        (r"(?i:(?:module|program|submodule\s*\([^)]*\))\s+)(?!procedure\b)(?P<name>\w+)", "module", False),
        (r"(?i:type\s*(?:,[^:]*)?::\s*)(?P<name>\w+)", "type", False),
        # `type build_target_t` (the `::` is optional without attributes); not `type is (...)`
        (r"(?i:type\s+)(?P<name>\w+)\s*(?:!.*)?$", "type", False),
        (r"(?i:interface\s+)(?!(?i:operator|assignment)\b)(?P<name>\w+)\s*(?:!.*)?$", "interface", False),
    ],
    # templates: the blocks and macros a page defines and other pages fill or call (Django, Jinja,
    # Twig, Liquid, Nunjucks `{% block name %}`, `{% macro name(`; Handlebars' inline partials; Go's
    # and Helm's `{{ define "name" }}`;
    # Rails' `content_for :name`; Razor's `@section Name`); the rest of a page is markup
    "template": [
        (r"\{%-?\s*(?:block|macro)\s+(?P<name>[\w.]+)", "section", False),
        (r"\{\{#\*inline\s+[\"'](?P<name>[^\"']+)", "section", False),
        (r"\{\{-?\s*define\s+\"(?P<name>[^\"]+)", "section", False),  # Go templates, Helm's helpers
        (r"<%[-=]?\s*content_for\??\s*\(?:(?P<name>\w+)", "section", False),
        (r"@section\s+(?P<name>\w+)", "section", False),
    ],
    # stylesheets: a top-level rule by its selector (`.btn-primary, .btn {`), Sass/Less mixins and
    # functions, keyframes (a line opening with `#` or `%` is skipped as a comment's)
    "stylesheet": [
        (r"@(?:mixin|function)\s+(?P<name>[\w-]+)", "function", False),
        (r"@keyframes\s+(?P<name>[\w-]+)", "section", False),
        (r"(?P<name>[.:\[]?[A-Za-z_-][^{};]{0,200}?)[ \t]*\{[^}]*$", "rule", True),
    ],
    # Coq: theorems, definitions and types by their vernacular keyword
    "coq": [
        (r"(?:Local\s+|Global\s+|Program\s+)?(?:Theorem|Lemma|Corollary|Proposition|Remark|Fact|Example|"
         r"Definition|Fixpoint|CoFixpoint|Function|Let)\s+(?P<name>[\w']+)", "function", False),
        (r"(?:Inductive|CoInductive|Variant|Record|Structure|Class|Instance)\s+(?P<name>[\w']+)", "type",
         False),
        (r"(?:Module|Section)(?:\s+Type)?\s+(?P<name>[\w']+)", "module", False),
    ],
    "prisma": [(r"(?:model|view|enum|type|generator|datasource)\s+(?P<name>\w+)\s*\{", "type", True)],
    "tcl": [
        (r"namespace\s+eval\s+(?P<name>[\w:]+)", "module", False),
        (r"proc\s+(?P<name>[\w:]+)", "function", False),
        (r"(?:oo::class|itcl::class|class)\s+(?:create\s+)?(?P<name>[\w:]+)", "class", False),
    ],
    # Solidity: every definition by its keyword; a parameter of function type (`function(bytes32,
    # bytes32) view returns (bytes32) hasher`, on its own line in a long signature) defines nothing
    "solidity": [
        (r"(?:abstract\s+)?(?:contract|library|interface)\s+(?P<name>\w+)", "class", False),
        (r"function\s+(?P<name>\w+)\s*\(", "function", False),
        (r"(?P<name>constructor|fallback|receive)\s*\(", "function", False),
        (r"modifier\s+(?P<name>\w+)", "function", False),
        (r"(?:event|error)\s+(?P<name>\w+)\s*\(", "type", False),
        (r"struct\s+(?P<name>\w+)", "struct", False),
        (r"enum\s+(?P<name>\w+)", "enum", False),
        (r"type\s+(?P<name>\w+)\s+is\b", "type", False),  # a user-defined value type
    ],
    # (System)Verilog: a `typedef` is named at its end (`typedef enum logic [5:0] { ... } ctrl_fsm_e;`,
    # on one line or as the closing `} name;` of a body: _NAME_AFTER_BODY); `endfunction`,
    # `endmodule`... close their definition, so the module's code after a function is not read as
    # part of that function
    "verilog": [
        (r"end(?:function|task|module|macromodule|class|package|interface|program)\b", _END, False),
        (_TYPEDEF_CLOSE.format(name=r"\w+"), _END, False),  # a typedef's `} name;`
        (r"typedef\s+(?!class\b)[^;]*\}\s*(?P<name>\w+)\s*(?:\[[^\]]*\]\s*)*;", "type", False),
        (r"typedef\s+(?:enum|struct|union)\b[^;]*$(?P<name>)", "type", False),
        (r"typedef\s+(?!class\b)[^;{}]*\s(?P<name>\w+)\s*(?:\[[^\]]*\]\s*)*;", "type", False),
        (r"(?:macro)?module\s+(?:automatic\s+)?(?P<name>\w+)", "module", False),
        (r"(?:virtual\s+)?class\s+(?P<name>\w+)", "class", False),
        (r"(?:interface|package|program)\s+(?P<name>\w+)", "module", False),
        (r"(?:function|task)\s+(?:automatic\s+|static\s+)?(?:[\w$]+\s+)*?(?:\[[^\]]*\]\s*)?"
         r"(?P<name>\w+)\s*[(;]", "function", False),
    ],
    # Vue and Svelte single-file components: the blocks, the options object's method shorthand
    # (`getThemeCluster(theme) {`, `async load(id: number): Promise<void> {` in TypeScript, a
    # quoted watcher `'$route'(to) {`) or `function` value (`format: function (v) {`), its option
    # groups (`methods: {`, so a method is not read as nested in the `mounted()` above it),
    # `<script setup>`'s arrow functions (a return type too)
    "sfc": [
        (r"<(?P<name>template|script|style)\b[^>]*>", "section", True),
        # a block's closing tag ends it: Svelte's markup is not wrapped in a `<template>`, it
        # follows `</script>` at the top level (it was read as the end of the script's last function)
        (r"</(?:template|script|style)>", _END, True),
        (r"(?P<name>props|data|computed|watch|methods|filters|directives|components|emits|setup)\s*:\s*[{\[]",
         "key", False),
        (r"(?:async\s+)?(?!(?:if|for|while|switch|catch|function|return|with|else)\b)"
         r"(?:(?P<name>[A-Za-z_$][\w$]*)|'(?P<quoted>[^'\s]+)'|\"(?P<dquoted>[^\"\s]+)\")"
         r"\s*\([^()]*\)(?:\s*:\s*[^{}()]+)?\s*\{\s*$", "function", False),
        # not a prop's or a watcher's own keys (`default: function () {`, `handler: function (v) {`)
        (r"(?!(?:default|validator|handler|get|set)\b)(?P<name>[A-Za-z_$][\w$]*)\s*:\s*(?:async\s+)?function\b",
         "function", False),
        (r"(?:export\s+)?(?:const|let|var)\s+(?P<name>[A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?"
         r"(?:\([^()]*\)(?:\s*:\s*[^=()]+)?|[A-Za-z_$][\w$]*)\s*=>", "function", False),
        # a Svelte 3/4 component's props: `export let size = "default";`, `export let open: boolean;`
        # (a read-only one `export const`); one line each, what follows is the script's
        (r"export\s+(?:let|const)\s+(?P<name>[A-Za-z_$][\w$]*)\s*[=;:]", "property", False),
    ],
    # bats test files: each `@test "name" {` block is a test (bash's grammar reads the line as an
    # error); their helpers are shell functions, which the generic patterns name
    "bats": [
        (r"@test\s+[\"']?(?P<name>.+?)[\"']?\s*\{?\s*$", "test", True),
    ],
    # Nim: routines by their keyword (`template`, `iterator`, `converter` too; a backticked operator
    # `proc `==`*(a, b: Foo)`), the types of a `type` section (indented: `TokenBucket* = ref
    # object`, `AsyncQueue*[T] = ref object of RootRef`, `Color {.pure.} = enum`) or of one line
    "nim": [
        (r"(?:proc|func|method|iterator|converter)\s+(?:`(?P<quoted>[^`]+)`|(?P<name>\w+))", "function",
         False),
        (r"(?:template|macro)\s+(?:`(?P<quoted>[^`]+)`|(?P<name>\w+))", "macro", False),
        (r"(?:type\s+)?(?P<name>[A-Za-z]\w*)\*?\s*(?:\[[^\]]*\]\s*)?(?:\{\.[^}]*\.\}\s*)?=\s*"
         r"(?:ref\s+|ptr\s+)?(?:object|enum|tuple|concept|distinct)\b", "type", False),
    ],
    # Java-like languages where the grammar gave up on a file (Groovy's does on `as` casts, `?.`,
    # `[a: b]` maps): a method by its modifiers and return type (`void registerAllowedMethod(String
    # name, Closure c) {`, `static <T> List<T> merge(`), its parameters closed before the body's
    # `{` or left open for the next lines (a Groovy command call, `println format(x)`, is neither),
    # and a constructor by its class's capital (`PipelineTestHelper() {`); classes, `def`s: generic.
    # No definition (kind ""): a variable (`def result = helper.runSh('pwd')`, a one-line closure;
    # `def notifyAll = {` opening a block stays a function) and a step called with named arguments
    # (`input message: 'Ship?'`, which the generic patterns read as GraphQL's type `message:`)
    "java_like": [
        (r"(?:(?:public|private|protected|static|final)\s+)*def\s+(?P<name>[\w$]+)\s*=(?!\s*\{[^{}]*$)", "",
         False),
        (r"(?P<name>[a-z]\w*)\s+[a-z]\w*:\s", "", False),
        (r"(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|protected|static|final|abstract|synchronized|"
         r"native|default|def)\s+)*(?:<[^>]+>\s+)?(?!(?:if|for|while|switch|catch|return|new|else|throw|"
         r"assert)\b)[\w.$]+(?:<[^()]*>)?(?:\[\])*\s+(?P<name>[A-Za-z_$][\w$]*)\s*"
         r"\((?:[^()]*(?:\([^()]*\)[^()]*)*\)\s*(?:throws\s+[\w.,\s]+)?\{\s*$|[^()]*$)", "function", False),
        (r"(?:(?:public|private|protected)\s+)?(?P<name>[A-Z]\w*)\s*\([^;()'\"]*\)\s*\{\s*$", "function",
         False),
    ],
    # Kotlin where its grammar gave up on a file (an ERROR root): a function by its name as the
    # grammar names it, after its annotations, type parameters and receiver (`suspend inline fun <T>
    # Semaphore.withPermit(`, `fun Iterable<Index>.filterAndLogExcessIndices(`: `withPermit`, not
    # `Iterable`). Type arguments nest to any depth (`fun Map<Pair<Table, LinkedHashSet<Column<*>>>,
    # List<FK>>.filterAndLogExcessConstraints(`) and hold no parenthesis before the name's `(`, so
    # `<...>` is any run without one (a regex cannot count brackets); a receiver may be a function
    # type (`fun <T> (suspend () -> T).startCoroutineUnintercepted(`); `fun<T>` needs no space.
    # Classes and the rest by the generic patterns.
    "kotlin": [
        (r"(?:@[\w.]+(?:\([^()]*\))?\s+)*(?:(?:public|private|protected|internal|open|override|inline|suspend|"
         r"tailrec|operator|infix|external|actual|expect|abstract|final)\s+)*fun(?:\s+|(?=<))"
         r"(?:<[^(){}=]*>\s*)?(?:(?:[A-Za-z_][\w.]*(?:<[^(){}=]*>)?|\((?:[^()]|\([^()]*\))*\))\??\.)?"
         r"(?P<name>[A-Za-z_]\w*|`[^`]+`)", "function", False),
    ],
    # GDScript (Godot): a script's global class (`class_name DialogicSubsystem`), its signals,
    # functions after annotations (`@rpc("any_peer") func sync_state(`), inner classes; enums by
    # the generic patterns
    "gdscript": [
        (r"class_name\s+(?P<name>\w+)", "class", True),
        (r"class\s+(?P<name>\w+)", "class", False),  # an inner class: `class SlotInfo:` (not `SlotInfo:`)
        (r"signal\s+(?P<name>\w+)", "signal", False),
        (r"(?:@\w+(?:\([^)]*\))?\s+)*(?:static\s+)?func\s+(?P<name>\w+)", "function", False),
    ],
    # Gleam: every definition is at the top level with its own keyword, after `pub` (and `opaque`
    # for a type whose constructors are private): `pub opaque type Decoder(t) {`, `pub const int:`
    # `fn`, an `@external` function without a body
    "gleam": [
        (r"(?:pub\s+)?(?:opaque\s+)?type\s+(?P<name>[A-Z]\w*)", "type", True),
        (r"(?:pub\s+)?const\s+(?P<name>[a-z_]\w*)", "const", True),
        (r"(?:pub\s+)?fn\s+(?P<name>[a-z_]\w*)", "function", True),
    ],
    # Crystal: a class method is named without its receiver (`def self.get_token`), predicates,
    # setters and operators keep their marks (`valid_csrf_token?`, `name=`, `[]?`, `<=>`); macros,
    # C bindings (`lib LibC`, `fun`), aliases, annotations; a definition's `end` at its own
    # indentation closes it (what follows at that level is not the method's)
    "crystal": [
        (r"end\b\s*(?:#.*)?$", _END, False),
        (r"(?:(?:private|protected|abstract)\s+)*def\s+(?:self\.)?"
         r"(?P<name>[A-Za-z_]\w*[?!=]?|\[\]=?\??|[-+*/%<=>!~^&|]+)", "function", False),
        (r"(?:(?:private|abstract)\s+)*macro\s+(?P<name>\w+[?!]?)", "macro", False),
        (r"(?:(?:private|abstract)\s+)*(?:class|struct)\s+(?P<name>[A-Z][\w:]*)", "class", False),
        (r"(?:(?:private)\s+)*(?:module|lib)\s+(?P<name>[A-Z][\w:]*)", "module", False),
        (r"(?:(?:private)\s+)*enum\s+(?P<name>[A-Z][\w:]*)", "enum", False),
        (r"(?:annotation|alias)\s+(?P<name>[A-Z][\w:]*)", "type", False),
        (r"fun\s+(?P<name>\w+)", "function", False),
    ],
    # C-like languages without a grammar here: `type name(` at column 0 with no `;` after it
    "c_like": [
        (r"(?:[\w:<>,*&]+\s+)+[*&]*(?P<name>[A-Za-z_]\w*)\s*\([^;]*$", "function", True),
    ],
}
_FAMILY_OF = {
    **dict.fromkeys(("ocaml", "sml", "fsharp"), "ml"),
    **dict.fromkeys(("elm",), "elm"),
    **dict.fromkeys(("clojure", "commonlisp", "scheme", "racket", "emacslisp", "fennel"), "lisp"),
    "erlang": "erlang",
    "objc": "objc",
    "matlab": "matlab",
    "r": "r",
    "vb": "vb",
    "fortran": "fortran",
    "tcl": "tcl",
    "solidity": "solidity",
    "verilog": "verilog",
    "bats": "bats",
    "nim": "nim",
    **dict.fromkeys(("groovy", "java", "processing"), "java_like"),
    "prisma": "prisma",
    "coq": "coq",
    "kotlin": "kotlin",
    "gdscript": "gdscript",
    "gleam": "gleam",
    "crystal": "crystal",
    **dict.fromkeys(("vue", "svelte", "astro"), "sfc"),
    **dict.fromkeys((*TEMPLATE_LANGUAGES, "razor"), "template"),
    **dict.fromkeys(STYLESHEET_LANGUAGES, "stylesheet"),
    **dict.fromkeys(("d", "glsl", "hlsl", "vala", "yacc", "lex"), "c_like"),
}
# Families whose patterns above name every definition: the generic patterns would misread their
# declarations (`integer :: i` as a Haskell signature, Verilog's `input wire clk` as a GraphQL type,
# MATLAB's `function out = f` as `out`, R's `error = function(e)` argument as a definition).
_FAMILIES_WITHOUT_GENERIC = frozenset({"fortran", "verilog", "matlab", "r", "solidity", "gleam", "template",
                                       "stylesheet", "coq"})
_FAMILY_RE = {
    family: [(re.compile(p), kind, top) for p, kind, top in patterns]
    for family, patterns in _FAMILY_PATTERNS.items()
}
_FIRST_WORD_RE = re.compile(r"[A-Za-z_]+")
_YAML_KEY_RE = re.compile(r"(?P<name>[A-Za-z_\"'][^:#\"']*[\"']?)\s*:(?:\s|$)")
_TOML_TABLE_RE = re.compile(r"\[\[?(?P<name>[^\]]+)\]\]?\s*(?:#.*)?$")
_COMMENT_PREFIXES = ("#", "//", "--", ";", "/*", "*", "%", "@", "\"\"\"", "'''", "(*", "{-", "<!--")
_PROSE_LANGUAGES = {"rst", "asciidoc", "pod", "text", "markdown"}
_RST_UNDERLINE_RE = re.compile(r"^([=\-~^\"'`#*+:.<>_])\1{2,}\s*$")
# AsciiDoc: `== Section` (or Markdown's `## Section`), outside delimited blocks (`----` listings,
# `....` literals, `====` examples, `////` comments ...: four or more of one character)
_ADOC_TITLE_RE = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*)$")
_ADOC_DELIMITER_RE = re.compile(r"^([-.=_*/+])\1{3,}\s*$")
# a two-line title's underline (Asciidoctor's setext style: level by character), as long as its
# title give or take one; it is no block's delimiter
_ADOC_UNDERLINE_LEVELS = {"=": 1, "-": 2, "~": 3, "^": 4, "+": 5}
_MAX_SCAN_LINE = 400
# POD (Perl's documentation: a `.pod` file, or a module's after `__END__`): its `=head1`..`=head4`
# titles. A title's formatting codes (`C<render>`, `B<< bold >>`) keep their text, stripped after
# the match: optional spaces around a lazy run backtrack cubically on a line of spaces.
POD_TITLE_RE = re.compile(r"=head([1-4])[ \t]+(\S.*)")
_POD_CODES = re.compile(r"[A-Z]<+([^<>]*)>+")


def pod_title(text: str) -> str:
    """A POD title as read: `C<run>` is `run`."""
    return _POD_CODES.sub(lambda c: c.group(1).strip(), text.strip())


@dataclass
class _Cand:
    row: int
    indent: int
    name: str
    kind: str
    sig: str


def _indent_of(line: str) -> int:
    n = 0
    for ch in line:
        if ch == " ":
            n += 1
        elif ch == "\t":
            n += 4
        else:
            break
    return n


def _code_candidates(lines: list[str], language: str | None) -> list[_Cand]:
    out: list[_Cand] = []
    extra = None
    if language == "yaml":
        extra = _YAML_KEY_RE
    elif language in ("toml", "ini"):  # `[section]`: an INI file's sections are TOML's tables
        extra = _TOML_TABLE_RE
    family_name = _FAMILY_OF.get(language or "", "")
    family = _FAMILY_RE.get(family_name, [])
    generic = family_name not in _FAMILIES_WITHOUT_GENERIC
    props = _rune_props(lines) if family_name == "sfc" else {}
    for row, line in enumerate(lines):
        if row in props:  # a Svelte 5 `let { ... } = $props()`: its props at the `let`'s level, nothing else
            level = props[row][0]
            out.extend(_Cand(row, level, name, "property", line.strip()) for name in props[row][1])
            continue
        if not line or len(line) > _MAX_SCAN_LINE:
            continue
        stripped = line.lstrip()
        if not stripped or stripped[0] in "#/;%*":
            continue
        indent = _indent_of(line)
        found = _family_candidate(family, row, indent, stripped)  # a quoted name too: `'$route'(to) {`
        if found is not None:  # kind "": a line the family knows defines nothing
            if found.kind and not found.name and family_name in _NAME_AFTER_BODY:
                found.name = _name_after_body(lines, row, indent, _NAME_AFTER_BODY[family_name])
            named = found.name or found.kind == _END  # a typedef whose body has no closing name: none
            if found.kind and named and not (out and _same_clause(out[-1], found)):
                out.append(found)
            continue
        if extra is None and stripped[0] in "\"'":
            continue
        if extra is not None:
            if indent == 0 or extra is _TOML_TABLE_RE:
                m = extra.match(stripped)
                if m and m.group("name"):
                    kind = "table" if extra is _TOML_TABLE_RE else "key"
                    out.append(_Cand(row, indent, m.group("name").strip().strip("\"'"), kind, stripped))
            continue
        first = _FIRST_WORD_RE.match(stripped)
        if not generic or not (
            (first is not None and first.group() in _FIRST_WORDS)
            or stripped[0] == "<"
            or any(h in stripped for h in _HINTS)
        ):
            continue
        for regex, kind in _GENERIC_RE:
            m = regex.match(stripped)
            if m:
                name = (m.group("name") or "").strip() or stripped.split("(")[0].split("{")[0].strip()
                out.append(_Cand(row, indent, name[:120], kind, stripped))
                break
    if language in _OFFSIDE_LETS:
        out = _without_local_lets(out)
    return out


# Svelte 5's props: `let { size = "default", open = $bindable(false), ...rest }: Props = $props();`
# on one line or many; each prop is named by its key (`class: className` is the prop `class`)
_PROPS_END_RE = re.compile(r"\}\s*(?::.*?)?=\s*\$props\s*\(\s*\)")
_PROPS_START_RE = re.compile(r"(?:let|const)\s*\{")
_PROP_KEY_RE = re.compile(r"([A-Za-z_$][\w$]*|\"[^\"]+\"|'[^']+')")
_MAX_PROPS_LINES = 200


def _rune_props(lines: list[str]) -> dict[int, tuple[int, list[str]]]:
    """Row -> (the destructuring's indentation, the props named on the row), for every row of
    each `$props()` destructuring (a row naming none has []); the rows of other code are absent."""
    found: dict[int, tuple[int, list[str]]] = {}
    for end, line in enumerate(lines):
        if "$props" not in line or len(line) > _MAX_SCAN_LINE or not _PROPS_END_RE.search(line):
            continue
        start = next((r for r in range(end, max(-1, end - _MAX_PROPS_LINES), -1)
                      if _PROPS_START_RE.search(lines[r])), None)
        if start is None or start in found:
            continue
        keys, closed = _pattern_keys(lines, start, end)
        if closed != end:  # the `let {` found above closes elsewhere: not this pattern's
            continue
        for row in range(start, end + 1):
            found[row] = (_indent_of(lines[start]), keys.get(row, []))
    return found


def _pattern_keys(lines: list[str], start: int, end: int) -> tuple[dict[int, list[str]], int]:
    """Row -> the keys of the object pattern opened on row `start`: its own entries only (not
    what a default's braces hold), not a rest element (`...rest`); comments skipped. And the row
    of its closing brace (-1: not up to `end`)."""
    keys: dict[int, list[str]] = {}
    depth, expect_key, in_comment = 0, True, False
    for row in range(start, end + 1):
        text = lines[row]
        match = _PROPS_START_RE.search(text) if row == start else None
        col = match.end() if match else 0
        while col < len(text):
            if in_comment or text.startswith("/*", col):
                close = text.find("*/", col + (0 if in_comment else 2))
                in_comment = close < 0
                col = len(text) if in_comment else close + 2
                continue
            if text.startswith("//", col):
                break
            ch = text[col]
            if ch in "\"'`" and not (depth == 0 and expect_key):  # a string: its commas and `//` are text
                col = _string_end(text, col)
                continue
            if depth == 0 and expect_key and not ch.isspace():
                key = _PROP_KEY_RE.match(text, col)
                expect_key = False  # a key, or `...rest`
                if key:
                    keys.setdefault(row, []).append(key.group(1).strip("\"'"))
                    col = key.end()
                    continue
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                if depth == 0:  # the pattern's closing brace
                    return keys, row
                depth -= 1
            elif ch == "," and depth == 0:
                expect_key = True
            col += 1
    return keys, -1


def _string_end(text: str, col: int) -> int:
    """The column after the string literal opening at `col` (its quote, `\\` escapes skipped);
    the line's end when it does not close on the line."""
    quote, at = text[col], col + 1
    while at < len(text):
        if text[at] == "\\":
            at += 2
        elif text[at] == quote:
            return at + 1
        else:
            at += 1
    return len(text)


# Families with definitions named after their body: the line closing it, at the indentation of
# the line that opened it (`} ctrl_fsm_e;` of a multi-line SystemVerilog typedef)
_NAME_AFTER_BODY = {"verilog": re.compile(_TYPEDEF_CLOSE.format(name=r"(?P<name>\w+)"))}
_MAX_BODY_LINES = 2000


def _name_after_body(lines: list[str], row: int, indent: int, closing: re.Pattern[str]) -> str:
    """The name on the line that closes the body opened at `row` (at `row`'s indentation), or ""."""
    for line in lines[row + 1 : row + 1 + _MAX_BODY_LINES]:
        stripped = line.lstrip()
        if stripped.startswith("}") and _indent_of(line) == indent:
            m = closing.match(stripped)
            return m.group("name") if m else ""
    return ""


# Languages whose local bindings are `let`s indented under their function, with no closing `in`
# (F#'s light syntax): OCaml's `let ... in` are told apart by the `in` instead.
_OFFSIDE_LETS = frozenset({"fsharp"})
_BODIES = frozenset({"function", "method"})


def _without_local_lets(cands: list[_Cand]) -> list[_Cand]:
    """The candidates less the `let`s inside a function's or a member's body (`let serializer =
    ctx.GetJsonSerializer()` in a method, a test's `let ctx = ...`): the nearest candidate above
    with less indentation is a function or a method. A type's or a module's `let`s are kept."""
    kept: list[_Cand] = []
    enclosing: list[_Cand] = []
    for cand in cands:
        while enclosing and enclosing[-1].indent >= cand.indent:
            enclosing.pop()
        local = cand.kind == "function" and cand.sig.startswith("let") and bool(enclosing)
        if local and enclosing[-1].kind in _BODIES:
            continue
        kept.append(cand)
        enclosing.append(cand)
    return kept


def _family_candidate(
    family: list[tuple[re.Pattern[str], str, bool]], row: int, indent: int, stripped: str
) -> _Cand | None:
    for regex, kind, top in family:
        if top and indent:
            continue
        m = regex.match(stripped)
        if m:
            groups = m.groupdict()
            name = groups.get("name") or groups.get("quoted") or groups.get("dquoted") or ""
            return _Cand(row, indent, name[:120], kind, stripped)
    return None


def _same_clause(previous: _Cand, cand: _Cand) -> bool:
    """Erlang's clauses of one function (`f(0) -> ...; f(N) -> ...`) are one definition."""
    return (previous.name, previous.kind, previous.indent) == (cand.name, cand.kind, cand.indent) and (
        cand.kind == "function"
    )


def _rst_candidates(lines: list[str]) -> tuple[list[_Cand], dict[int, int]]:
    """reStructuredText section titles (underlined, optionally overlined): candidates and levels."""
    out: list[_Cand] = []
    levels: dict[int, int] = {}
    styles: dict[tuple[str, bool], int] = {}
    n = len(lines)
    row = 0
    while row < n - 1:
        title = lines[row]
        under = lines[row + 1]
        over = row > 0 and lines[row - 1].rstrip() == under.rstrip()
        if (
            title.strip()
            and (over or not title[0].isspace())
            and len(title) <= _MAX_SCAN_LINE
            and _RST_UNDERLINE_RE.match(under)
            and len(under.rstrip()) >= len(title.rstrip())
            and not _RST_UNDERLINE_RE.match(title)
        ):
            start = row
            if over:
                start = row - 1
            style = (under[0], over)
            level = styles.setdefault(style, len(styles) + 1)
            out.append(_Cand(start, 0, title.strip()[:200], "heading", title.strip()))
            levels[start] = level
            row += 2
            continue
        row += 1
    return out, levels


def _asciidoc_candidates(lines: list[str]) -> tuple[list[_Cand], dict[int, int]]:
    """AsciiDoc section titles, outside delimited blocks: candidates and levels (`=` counted)."""
    out: list[_Cand] = []
    levels: dict[int, int] = {}
    block: str | None = None
    for row, line in enumerate(lines):
        if len(line) > _MAX_SCAN_LINE:
            continue
        underlined = None if block else _underlined_title(lines[row - 1] if row else "", line)
        if underlined is not None:
            out.append(_Cand(row - 1, 0, underlined[:200], "heading", underlined))
            levels[row - 1] = _ADOC_UNDERLINE_LEVELS[line[0]]
            continue
        delimiter = _ADOC_DELIMITER_RE.match(line)
        if delimiter:
            block = None if block == line.strip() else (block or line.strip())
            continue
        title = None if block else _ADOC_TITLE_RE.match(line)
        if title:
            out.append(_Cand(row, 0, title.group(2).strip()[:200], "heading", line.strip()))
            levels[row] = len(title.group(1))
    return out, levels


def _pod_candidates(lines: list[str]) -> tuple[list[_Cand], dict[int, int]]:
    """POD's `=head1`..`=head4` titles: candidates and levels. A command starts its paragraph at
    the line's start; a verbatim block (an example) is indented, so holds none."""
    out: list[_Cand] = []
    levels: dict[int, int] = {}
    for row, line in enumerate(lines):
        title = POD_TITLE_RE.match(line) if len(line) <= _MAX_SCAN_LINE else None
        name = pod_title(title.group(2)) if title else ""
        if title and name:
            out.append(_Cand(row, 0, name[:200], "heading", line.strip()))
            levels[row] = int(title.group(1))
    return out, levels


def _underlined_title(above: str, line: str) -> str | None:
    """The title of a two-line AsciiDoc section title whose underline is `line` (`Title` over
    `-----`), else None. Taken for a listing's `----`, such an underline opened a block that no
    later line closed: every title after it was lost."""
    title = above.strip()
    underline = line.rstrip()
    if not title or underline[:1] not in _ADOC_UNDERLINE_LEVELS or len(set(underline)) != 1:
        return None
    if len(underline) < 2 or abs(len(underline) - len(above.rstrip())) > 1:
        return None
    if title[0] in "[.=/-+*_<>|" or _ADOC_DELIMITER_RE.match(above):  # an attribute, a block title
        return None
    return title


def _attach_comments(lines: list[str], row: int, floor: int) -> int:
    """Move a definition's start up over the comments/decorators directly above it."""
    start = row
    while start - 1 > floor:
        prev = lines[start - 1].strip()
        if not prev or not prev.startswith(_COMMENT_PREFIXES):
            break
        start -= 1
    return start


def chunk_fallback(
    path: str,
    text: str,
    language: str | None = None,
    *,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
    overlap: int = OVERLAP_LINES,
) -> list[Chunk]:
    """Chunk any text by definition-looking lines (code) or section titles (rst, AsciiDoc, POD), and size
    caps."""
    caps = Caps(max_lines, max_chars, overlap).normalized()
    lines = split_lines(text)
    index = LineIndex(lines)
    n = len(lines)
    if not text.strip():
        return []
    table = DefTable()
    headings: dict[int, str] = {}
    if language in _PROSE_LANGUAGES:
        sections = {"rst": _rst_candidates, "asciidoc": _asciidoc_candidates, "pod": _pod_candidates}.get(
            language or ""
        )
        if sections is None and (path or "").lower().endswith((".rst", ".rest")):
            sections = _rst_candidates
        if sections is not None:
            cands, levels = sections(lines)
            stack: list[tuple[int, str]] = []
            for cand in cands:
                level = levels[cand.row]
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, cand.name))
                headings[cand.row] = " > ".join(title for _, title in stack)
                title_row = cand.row + 1 if lines[cand.row].strip() != cand.sig else cand.row
                table.add(title_row, Definition(cand.name, "heading", title_row + 1), "")
        else:
            cands = []
        with_signature = False
    else:
        cands = _code_candidates(lines, language)
        for cand in cands:
            if cand.kind == _END:
                continue
            sig = clip_signature(cand.sig.rstrip().rstrip("{").rstrip())
            table.add(cand.row, Definition(cand.name, cand.kind, cand.row + 1), sig)
        with_signature = True
    table.sort()

    def split(
        lo: int, hi: int, heading: str, base_indent: int, depth: int, outer: _Cand | None = None
    ) -> list[Piece]:
        inner = [c for c in cands if lo <= c.row <= hi and c.indent > base_indent]
        if base_indent < 0:
            inner = [c for c in inner if c.indent == 0]
        elif any(c.kind != _END for c in inner):
            level = min(c.indent for c in inner if c.kind != _END)
            inner = [c for c in inner if c.indent == level and c.row > lo]
        if not any(c.kind != _END for c in inner) or depth > 8:
            return [Piece(lo, hi, heading)]
        starts: list[tuple[int, bool, object]] = []
        trailing: set[int] = set()  # first rows of what follows a closed definition: the level's own
        floor = lo - 1
        for candidate in inner:
            if candidate.kind != _END:
                start = _attach_comments(lines, candidate.row, floor) if with_signature else candidate.row
                starts.append((start, True, candidate))
            closed = candidate.kind == _END or candidate.kind in _ONE_LINE_KINDS
            if closed and candidate.row < hi:  # a next definition on that row takes it (make_units)
                starts.append((candidate.row + 1, False, None))
                trailing.add(candidate.row + 1)
            floor = candidate.row
        units: list[Unit] = []
        for start, end, cand in make_units(starts, lo, hi):
            if not isinstance(cand, _Cand):
                if start in trailing and outer is not None:  # a module's code after a function: the module's
                    units.append(Unit(start, end, context=clip_signature(outer.sig), context_row=outer.row,
                                      trailing=True))
                else:
                    units.append(Unit(start, end, trailing=start in trailing))
                continue
            if headings:
                sub_heading = headings.get(cand.row, heading)
                units.append(Unit(start, end, True, heading=sub_heading, split=_fixed_heading(sub_heading)))
                continue
            label = f"{cand.kind} {cand.name}".strip()
            sub_heading = f"{heading} > {label}" if heading else label

            def sub(s: int, e: int, _c: _Cand = cand, _h: str = sub_heading, _l: str = label) -> list[Piece]:
                pieces = split(s, e, _h, _c.indent, depth + 1, _c)
                if len(pieces) == 1:
                    pieces[0].heading = heading
                    pieces[0].context = clip_signature(_c.sig)
                    pieces[0].context_row = _c.row
                    pieces[0].context_label = _l
                return pieces

            units.append(Unit(start, end, True, clip_signature(cand.sig), cand.row, label, split=sub))
        return group_units(units, index, caps, heading)

    pieces = split(0, n - 1, "", -1, 0)
    return pieces_to_chunks(index, pieces, table, caps, with_signature=with_signature)


def _fixed_heading(heading: str) -> Callable[[int, int], list[Piece]]:
    def sub(s: int, e: int) -> list[Piece]:
        return [Piece(s, e, heading)]

    return sub
