"""Where a hit's snippet starts: at the lines that match, not at the top of a chunk that opens
with something else (a table in a comment above the definition the hit is for). Real index, real
chunker, real search."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.search.snippets import best_window
from tests.conftest import indexed

TABLE_THEN_FUNCTION = '''import sys

# +--------+---------+----------------+
# | state  | colour  | shown as       |
# +--------+---------+----------------+
# | ok     | green   | a tick         |
# | failed | red     | a cross        |
# +--------+---------+----------------+
@staticmethod
def render_status_rows(rows, stream=sys.stdout):
    """Print one line per row, coloured by its state."""
    for row in rows:
        stream.write(f"{row.state}: {row.text}\\n")
'''


def test_the_snippet_starts_at_the_definition_the_hit_is_for(engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "proj", {"status.py": TABLE_THEN_FUNCTION})
    hits = engine.search("render_status_rows", [name], limit=3)
    hit = hits[0]
    assert hit.path == "status.py" and hit.line <= 9 <= hit.end_line
    assert hit.line == 9, f"the snippet starts at line {hit.line}: {hit.snippet[:80]!r}"
    header = ["@staticmethod", "def render_status_rows(rows, stream=sys.stdout):"]
    assert hit.snippet.split("\n")[:2] == header


def test_a_window_without_hits_starts_at_the_top() -> None:
    assert best_window("\n\nalpha\nbeta", 10, ["zzz"]) == (12, "alpha\nbeta")


CALLER_THEN_DEFINITION = '''class Context:
    def call_on_close(self, callback):
        """Register a function to be called when the context tears down: close resources here."""
        self.callbacks.append(callback)
        return callback

    def close(self):
        """Invoke all close callbacks."""
        for callback in self.callbacks:
            callback()
'''


def test_of_two_definitions_the_snippet_starts_at_the_one_named() -> None:
    signatures = "class Context:\ndef call_on_close(self, callback):\ndef close(self):"
    line, snippet = best_window(CALLER_THEN_DEFINITION, 40, ["close"], signatures=signatures)
    assert (line, snippet.split("\n")[0]) == (46, "    def close(self):")


RING_METHODS = '''    def from_GaussianIntegerRing(K1, a, K0):
        if a.y == 0:
            return a.x

    def gcdex(self, a, b):
        return gcdex(a, b)

    def lcm(self, a, b):
        return lcm(a, b)

    def exquo(self, a, b):
        return a // b

    def sqrt(self, a):
        """Compute square root of ``a``. """
        return sqrt(a)
'''


def test_a_line_counts_a_question_word_by_its_stem() -> None:
    """"how are integer square roots computed" (sympy's IntegerRing): the window counted `roots`
    and `computed` nowhere, only `integer` in the class name, and showed the chunk's head; the
    line saying `Compute square root` is what BM25 matched (its stems `root`, `comput`)."""
    signatures = "def from_GaussianIntegerRing(K1, a, K0):\ndef gcdex(self, a, b):\ndef lcm(self, a, b):\n" \
        "def exquo(self, a, b):\ndef sqrt(self, a):"
    words = ["integer", "square", "roots", "computed"]
    line, snippet = best_window(RING_METHODS, 202, words, max_lines=4, signatures=signatures)
    assert (line, snippet.split("\n")[0]) == (215, "    def sqrt(self, a):")
