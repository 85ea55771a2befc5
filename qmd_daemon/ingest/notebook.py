"""Jupyter notebooks read as the code they hold. A notebook is JSON: its cells' lines sit in
quoted, escaped strings between metadata and outputs (plots as base64, tables, tracebacks), so
read as text it ranks by its outputs' words and its snippets show `"    return x\\n",`.

The index reads a notebook through a *view*: a text with exactly the file's lines, where each
line that holds a cell's source line holds that line decoded, a markdown or raw cell's line as a
comment of the kernel's language (jupytext's percent format writes them so), and every other
line (JSON structure, metadata, outputs) is empty. Chunking, definitions, line numbers and
snippets then work as for any source file, and a hit's line is the notebook file's own line:
an agent opening `path:line` lands on that cell's source.

The view is chunked as the script its cells make (jupytext's percent format: the cells' lines in
order, a blank line between cells), and each chunk's lines mapped back to the file's: chunked as
laid out in the file, a cell whose outputs fill 300 lines would spend the chunk's line budget on
nothing and cut its neighbours into one-line chunks."""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from qmd_daemon.file_types import LANGUAGE_SUFFIXES
from qmd_daemon.ingest.chunking import chunk_text
from qmd_daemon.text.chunk_model import Chunk, Definition

# comment lead of a kernel language for the markdown cells (`#` for the rest)
_COMMENT = {
    **dict.fromkeys(("javascript", "typescript", "java", "kotlin", "scala", "go", "rust", "c", "cpp",
                     "csharp", "swift", "dart", "groovy"), "//"),
    **dict.fromkeys(("haskell", "lua", "sql"), "--"),
    "matlab": "%",
}
# kernel spellings that are not the table's language names
_KERNEL_LANGUAGES = {"c++": "cpp", "c#": "csharp", "octave": "matlab", "ipython": "python", "bash": "shell"}


@dataclass(frozen=True)
class NotebookView:
    text: str
    language: str | None  # the kernel's language, as file_types names it; None: one it does not know
    # the script the cells make: their lines decoded (a cell written as one string split into its
    # lines), a blank line between cells
    script: tuple[str, ...]
    # the file's line (1-based) of each line of the script; a file line holds several where a
    # writer put several source lines on one (a cell as one string, a notebook on one line)
    script_rows: tuple[int, ...]

    def chunks(self, path: str) -> list[Chunk]:
        """The chunks of the cells' script, at the file's lines (module docstring). A chunk over
        several file lines holds those lines of the view (a line with several source lines holds
        them joined: its snippet's lines stay the file's); a chunk within one file line holds the
        chunker's text: a long line (a data literal) cut into many chunks, each used to hold the
        whole line (a 270 KB notebook stored 60 MB of chunk text); a notebook on one line, its
        source lines (results.py: such a hit is at that line)."""
        lines = self.text.split("\n")
        rows = self.script_rows
        chunked = []
        for chunk in chunk_text(path, "\n".join(self.script), self.language):
            start, end = rows[chunk.start_line - 1], rows[chunk.end_line - 1]
            text = chunk.text if start == end else "\n".join(lines[start - 1:end])
            definitions = [Definition(d.name, d.kind, rows[d.line - 1]) for d in chunk.definitions]
            chunked.append(Chunk(start, end, text, definitions, chunk.signature, chunk.heading))
        return chunked


def notebook_view(text: str) -> NotebookView | None:
    """The view of a notebook's JSON text (module docstring); None when it is not a notebook
    (not JSON, or no `cells` list): the caller indexes such a file as the JSON it is."""
    try:
        notebook = json.loads(text)
    except ValueError:
        return None
    cells = _cells(notebook)
    if cells is None:
        return None
    language = _kernel_language(notebook.get("metadata"))
    comment = _COMMENT.get(language or "", "#")
    escaped = text.isascii()  # a writer that escapes every non-ASCII character (json.dump's default)
    starts = [0] + [found.end() for found in re.finditer("\n", text)]
    lines = [""] * len(starts)
    cursor = 0
    script: list[str] = []
    rows: list[int] = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        if rows:  # a blank line between cells, at the file's line after the last one
            script.append("")
            rows.append(min(rows[-1] + 1, len(lines)))
        lead = "" if cell.get("cell_type") == "code" else f"{comment} "
        for piece in _source_pieces(cell.get("source", cell.get("input"))):
            at = _find_encoded(text, piece, cursor, escaped)
            if at < 0:  # written some other way (escapes): the line of the last one found
                row = bisect_right(starts, cursor) - 1
            else:
                row = bisect_right(starts, at) - 1
                cursor = at + 1
            # every line break Python knows (a lone "\r" too): the chunker splits on them all
            parts = piece.splitlines()
            while parts and not parts[-1].strip():
                parts.pop()
            for part in parts:
                shown = f"{lead}{part}" if part.strip() else ""
                script.append(shown)
                rows.append(row + 1)
                # the view's line: the file line's source lines (joined when it holds several)
                lines[row] = f"{lines[row]} {shown}" if lines[row] and shown else lines[row] or shown
    while script and not script[-1]:
        script.pop()  # a separator after cells that held nothing
        rows.pop()
    return NotebookView("\n".join(lines), language, tuple(script), tuple(rows))


def _cells(notebook: Any) -> list[Any] | None:
    """nbformat 4's `cells`, or nbformat 3's `worksheets[].cells` (code cells hold `input`)."""
    if not isinstance(notebook, dict):
        return None
    if isinstance(notebook.get("cells"), list):
        return list(notebook["cells"])
    sheets = notebook.get("worksheets")
    if not isinstance(sheets, list):
        return None
    return [cell for sheet in sheets if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list)
            for cell in sheet["cells"]]


def _source_pieces(source: Any) -> list[str]:
    """A cell's `source`: a list of lines (nbformat writes one a JSON line) or one string."""
    if isinstance(source, str):
        return [source] if source.strip() else []
    if isinstance(source, list):
        return [piece for piece in source if isinstance(piece, str) and piece.strip()]
    return []


def _find_encoded(text: str, piece: str, start: int, escaped: bool) -> int:
    """Where the JSON string of `piece` is in the file from `start`, as nbformat (UTF-8 kept) or
    an ASCII-escaping writer spells it; -1 when neither. `escaped`: the file is all ASCII, so that
    spelling is looked for first: a spelling the file does not use is looked for to its end, once a
    line (an escaped 8.6 MB notebook of 2,000 non-ASCII lines took 1.3 s, 0.02 s kept as UTF-8)."""
    for ascii_only in (escaped, not escaped) if not piece.isascii() else (False,):
        at = text.find(json.dumps(piece, ensure_ascii=ascii_only), start)
        if at >= 0:
            return at
    return -1


def _kernel_language(metadata: Any) -> str | None:
    if not isinstance(metadata, dict):
        return "python"
    named = None
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        block = metadata.get(key)
        if isinstance(block, dict) and isinstance(block.get(field), str):
            named = block[field].strip().lower()
            break
    if named is None:  # nbformat's default kernel when a notebook says none
        return "python"
    named = _KERNEL_LANGUAGES.get(named, named)
    return named if named in LANGUAGE_SUFFIXES or named == "matlab" else None
