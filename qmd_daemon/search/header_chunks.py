"""Chunks that are only a file's preamble: imports, `use`/`#include`/`require`, package and
namespace lines, license comments, a module docstring. They name everything the file touches, so
a question's words pile up in them ("cookies", "redirects" in the imports of the module that
handles both), yet they answer nothing: the code that does the thing is further down. The rules
are how code is written in any language, not a list of files."""

from __future__ import annotations

import re

_PREAMBLE = re.compile(
    r"""^\s*(?:
        (?:from\s+\S+\s+)?import\b                                   # Python, Java, Go, Kotlin, JS/TS, Swift
      | export\s+(?:\*|\{[^}]*\}|type\s+\{[^}]*\})(?:\s+as\s+\w+)?\s+from\b  # JS/TS re-exports
      | (?:const|let|var)\s+[\w{}\s,:]+=\s*require\s*\(              # CommonJS
      | require(?:_relative|_once)?\b | include(?:_once)?\b           # Ruby, PHP
      | (?:pub(?:\([\w\s]+\))?\s+)?(?:use\s+[\w:\\{}, *]+[;{]?\s*$|mod\s+\w+\s*;)  # Rust, PHP
      | extern\s+crate\b
      | using\s+(?:static\s+)?[\w.=\s]+; | global\s+using\b          # C#
      | package\s+[\w.]+\s*;? | namespace\s+[\w.\\]+\s*;?$            # Java, Go, PHP, C#
      | \#\s*(?:include|import|pragma\s+once|ifndef|ifdef|define\s+\w+_H\w*\s*$|endif)\b  # C, C++, ObjC
      | @file\b | ['"]use\ strict['"];? | <\?php
      | if\s+TYPE_CHECKING\s*: | try\s*: | except\s+ImportError\b[^:]*:
      | __all__\s*=
    )""",
    re.X,
)
# a line inside a multi-line import: one name (maybe aliased), a quoted path, or a closing bracket
_CONTINUATION = re.compile(
    r"""^\s*+(?:[\w.:\\]++(?:\s+as\s+\w+)?\s*,?|\w*\s*["'][^"']*["']\s*,?|[)}\]];?|[\w:]+::\{|\{)\s*$"""
)
_COMMENT = re.compile(r"^\s*(?:#(?!\s*(?:include|import|define|if|pragma))|//|/\*|\*|\*/|--|<!--|-->|;;|%)")
_DOCSTRING = re.compile(r'^\s*[rRuUbB]?("""|\'\'\')')
SHARE = 0.9  # at least this share of non-blank lines is preamble
# Comments that document the definition below them, not the file, by language: R's roxygen
# (`#' Bind multiple data frames by row` above `bind_rows <- function`); a long block is cut from
# its function into a chunk of its own, which says what the function does.
_DOC_OF_NEXT = {"r": re.compile(r"^\s*#'")}


def is_preamble_only(text: str, language: str | None = None) -> bool:
    """True when (nearly) every non-blank line is an import, a comment or a module docstring.
    Stops at the first line past the allowance: most chunks are code and say so early."""
    doc_of_next = _DOC_OF_NEXT.get(language or "")
    lines = [line for line in text.splitlines() if line.strip()]
    allowance = (1.0 - SHARE) * len(lines)
    other = 0
    quote: str | None = None
    for line in lines:
        if quote is not None:  # inside a docstring
            if quote in line:
                quote = None
            continue
        opened = _DOCSTRING.match(line)
        if opened:
            if opened.group(1) not in line[opened.end():]:
                quote = opened.group(1)
            continue
        documents = doc_of_next is not None and doc_of_next.match(line)
        if documents or not (_COMMENT.match(line) or _PREAMBLE.match(line) or _CONTINUATION.match(line)):
            other += 1
            if other > allowance:
                return False
    return bool(lines)
