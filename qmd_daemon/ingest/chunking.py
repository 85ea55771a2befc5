"""Split a file's text into chunks: markdown by headings, code by symbols, the rest by heuristics.

`chunk_text` never raises: a chunker that fails falls back to the regex chunker, and that one to
plain line windows. Lines are 1-based inclusive; a chunk's text is exactly its lines joined with
"\\n" (a "\\r" before the newline dropped), except that a single enormous line is cut by
characters into several chunks of that one line.
"""

from __future__ import annotations

import hashlib
import logging

from qmd_daemon.file_types import language_of_text, table_key
from qmd_daemon.ingest.chunk_code import SUPPORTED_LANGUAGES, available_languages, chunk_code
from qmd_daemon.ingest.chunk_fallback import (
    MAX_CHARS,
    MAX_LINES,
    OVERLAP_LINES,
    Caps,
    chunk_fallback,
    plain_chunks,
)
from qmd_daemon.ingest.chunk_markdown import chunk_markdown
from qmd_daemon.text.chunk_model import Chunk

log = logging.getLogger(__name__)

__all__ = ["CHUNKER_VERSION", "MAX_CHARS", "MAX_LINES", "OVERLAP_LINES", "SUPPORTED_LANGUAGES", "chunk_text"]



def grammar_key(languages: list[str]) -> str:
    """A short stable key for a list of grammar languages (part of CHUNKER_VERSION)."""
    return hashlib.sha1(",".join(sorted(languages)).encode()).hexdigest()[:10]


# Stored per collection: when chunking changes, the next update re-chunks every file. The grammar
# key follows the languages parsed with tree-sitter here, the table key the file-type table, so
# neither a new grammar nor a new language needs a manual bump; a change to a chunker bumps the
# leading number (3: `.bats` files chunked at their `@test` blocks, no Fortran or Verilog
# declarations read as definitions, C++ forward declarations `class X;` no definitions either;
# 4: MATLAB and R definition families, OCaml `val` specifications, Objective-C headers and NS_ENUMs;
# 5: a notebook's source lines that share a file line (one-line notebooks, a cell as one string)
# chunked as lines, not joined by spaces; 6: Vue/Svelte component blocks and methods, Clojure
# names after metadata and `deftest`s, F# local `let`s no definitions, Solidity and Fortran
# definition tables; 7: Nim routines and type sections, SQL extension scripts' `@extschema@.` names
# and functions as functions; 8: a Groovy file its grammar gave up on (an ERROR root) by the
# fallback, Java-like methods and constructors named there; Kotlin likewise, its functions past
# their type parameters and receiver; 9: Groovy `def` variables and named-argument steps no
# definitions there, PowerShell function names without their scope `global:`; 10: closing lines
# end a definition in the fallback (`endfunction`, a SystemVerilog typedef's `} name;` and its
# name, Svelte's `</script>` before the markup, Crystal's `end`; the lines after one inside a definition
# are that definition's; a GDScript signal is one line), GDScript, Gleam and Crystal
# definition families (langs5); 11: the same with Kotlin functions past receivers with generics
# of any depth in the fallback, Perl's `has` attributes as definitions and POD sections headed by
# their `=head` titles (loose21: a home either branch indexed at 10 is re-read); 12: a Svelte
# component's props (`export let`, Svelte 5's `let { ... } = $props()`) as one-line definitions
# (loose22; `.pod` files, new to the table, re-key it by themselves); 13: the same with an Elixir
# module or protocol with a dotted name (`defmodule Plug.Conn`) also defining its last part
# (`Conn`), the name `alias` gives it (session 22: a home either branch indexed at 12 is re-read).
CHUNKER_VERSION = (
    f"13:{MAX_LINES}:{MAX_CHARS}:{OVERLAP_LINES}:g{grammar_key(available_languages())}:t{table_key()}"
)


def chunk_text(
    path: str,
    text: str,
    language: str | None = None,
    *,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
    overlap: int = OVERLAP_LINES,
) -> list[Chunk]:
    """Chunks of one file. `language` as in `file_types.language_of` (None: guessed from the path).

    Empty or whitespace-only text gives no chunks.
    """
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = str(text)
    if not text or text.isspace():
        return []
    if language is None:
        try:
            language = language_of_text(path or "", text)
        except Exception:
            language = None
    sizes = {"max_lines": max_lines, "max_chars": max_chars, "overlap": overlap}
    if language == "shell" and (path or "").lower().endswith(".bats"):
        language = "bats"  # for the chunker only: bash's grammar cannot parse `@test` blocks
    try:
        if language == "markdown":
            return chunk_markdown(path, text, language, **sizes)
        if language in SUPPORTED_LANGUAGES:
            chunks = chunk_code(path, text, language, **sizes)
            if chunks is not None:
                return chunks
    except Exception:  # a parser or chunker bug must not stop indexing
        log.warning("chunking %s as %s failed; using the fallback", path, language, exc_info=True)
    try:
        return chunk_fallback(path, text, language, **sizes)
    except Exception:
        log.warning("fallback chunking of %s failed; using plain windows", path, exc_info=True)
    return plain_chunks(text, Caps(max_lines, max_chars, overlap))
