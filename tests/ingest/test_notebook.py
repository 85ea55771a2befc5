"""Jupyter notebooks are indexed by their cells: found by their code's words, never by their
outputs', at the notebook file's own lines, with snippets of the code as written (not JSON).
Before, `.ipynb` was not in the default mask: a notebook's code was invisible to search."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.ingest.notebook import notebook_view
from qmd_daemon.settings import DEFAULT_MAX_FILE_BYTES
from tests.conftest import write_tree

PLOT = base64.b64encode(bytes(range(256)) * 5000).decode()  # a 1.7 MB "image/png" output, one line


def nbformat4(cells: list[dict[str, object]], language: str = "python") -> str:
    """A notebook as Jupyter writes it (nbformat.write: indent 1, keys sorted, a source line a
    JSON line, UTF-8 kept)."""
    notebook = {"cells": cells, "metadata": {"kernelspec": {"display_name": language, "language": language,
                                                           "name": language}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def code(*lines: str, outputs: list[dict[str, object]] | None = None) -> dict[str, object]:
    return {"cell_type": "code", "execution_count": 1, "id": "c", "metadata": {},
            "outputs": outputs or [], "source": [line + "\n" for line in lines[:-1]] + [lines[-1]]}


def markdown(*lines: str) -> dict[str, object]:
    return {"cell_type": "markdown", "id": "m", "metadata": {},
            "source": [line + "\n" for line in lines[:-1]] + [lines[-1]]}


TRAINING = nbformat4([
    markdown("# Training the churn model", "We fit a gradient boosted classifier."),
    code("import pandas as pd", "frame = pd.read_csv('customers.csv')",
         outputs=[{"data": {"image/png": PLOT, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
                   "metadata": {}, "output_type": "display_data"},
                  {"name": "stdout", "output_type": "stream",
                   "text": ["zebraoutputword appears only in an output\n"] * 300}]),
    code("def fit_churn_classifier(frame):", "    model = GradientBoostingClassifier(n_estimators=200)",
         "    return model.fit(frame.drop(columns='churned'), frame.churned)"),
])


def file_line(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.split("\n"), 1) if needle in line)


def test_a_notebooks_code_is_found_at_the_files_line_with_its_code_as_snippet(
    engine: Engine, tmp_path: Path
) -> None:
    root = write_tree(tmp_path / "proj", {"notebooks/train.ipynb": TRAINING, "util.py": "x = 1\n"})
    assert len(TRAINING.encode()) > DEFAULT_MAX_FILE_BYTES  # the plot: over other files' size cap
    name = engine.add_collection(root).name
    report = engine.update([name])[0]
    assert report.files == 2 and not report.skipped

    hits = engine.search("fit_churn_classifier", [name])
    assert hits and hits[0].path == "notebooks/train.ipynb"
    assert hits[0].line == file_line(TRAINING, "def fit_churn_classifier")  # the JSON file's line
    assert hits[0].snippet.startswith("def fit_churn_classifier(frame):")
    assert '\\n"' not in hits[0].snippet and "GradientBoostingClassifier(n_estimators=200)" in hits[0].snippet

    prose = engine.search("gradient boosted classifier churn model", [name])
    assert prose and prose[0].path == "notebooks/train.ipynb"
    # an output's words are no notebook's content
    assert not [h for h in engine.search("zebraoutputword", [name]) if h.path.endswith(".ipynb")]


def test_the_view_keeps_every_line_of_the_file_and_only_the_cells_source() -> None:
    view = notebook_view(TRAINING)
    assert view is not None and view.language == "python"
    raw, shown = TRAINING.split("\n"), view.text.split("\n")
    assert len(shown) == len(raw)
    assert shown[file_line(TRAINING, "read_csv") - 1] == "frame = pd.read_csv('customers.csv')"
    assert shown[file_line(TRAINING, "# Training the churn") - 1] == "# # Training the churn model"
    outputs = ("zebraoutputword", "image/png", PLOT[:40])
    assert not [line for line in shown if any(output in line for output in outputs)]
    # chunked as the cells' script: the 300 output lines do not cut the cells into pieces
    chunks = view.chunks("train.ipynb")
    assert len(chunks) == 1 and chunks[0].start_line == file_line(TRAINING, "# Training the churn")
    assert ("fit_churn_classifier", file_line(TRAINING, "def fit_churn_classifier")) in [
        (d.name, d.line) for d in chunks[0].definitions]


def test_older_and_unusual_notebooks() -> None:
    # nbformat 3: cells inside worksheets, code in `input`
    v3 = json.dumps({"metadata": {"name": ""}, "nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": [
        {"cell_type": "heading", "level": 1, "metadata": {}, "source": ["Spin states"]},
        {"cell_type": "code", "collapsed": False, "input": ["from sympy.physics.quantum.spin import Jz\n",
                                                             "Jz"], "language": "python", "metadata": {},
         "outputs": []}]}]}, indent=1)
    view = notebook_view(v3)
    assert view is not None and "from sympy.physics.quantum.spin import Jz" in view.text.split("\n")
    # one string a cell (some writers): the cell's lines on the line its string is on
    one_line = json.dumps({"cells": [{"cell_type": "code", "source": "x = 1\ny = launch(x)\n",
                                      "metadata": {}, "outputs": []}], "metadata": {}}, indent=1)
    view = notebook_view(one_line)
    assert view is not None and "x = 1 y = launch(x)" in view.text.split("\n")
    # an R kernel: its language, its comment for markdown
    r = nbformat4([markdown("Summaries"), code("summarise_sales <- function(df) df")], language="R")
    view = notebook_view(r)
    assert view is not None and view.language == "r" and "# Summaries" in view.text.split("\n")
    assert notebook_view("{not json") is None and notebook_view('{"a": 1}') is None


def test_a_broken_notebook_is_indexed_as_the_json_it_is(engine: Engine, tmp_path: Path) -> None:
    broken = '{"cells": [ {"cell_type": "code", "source": ["uniqueword'
    root = write_tree(tmp_path / "proj", {"bad.ipynb": broken})
    name = engine.add_collection(root).name
    report = engine.update([name])[0]
    assert report.files == 1 and not report.skipped
    assert [h.path for h in engine.search("uniqueword", [name])] == ["bad.ipynb"]


def test_a_notebook_snippet_shows_its_cells_lines_without_the_json_between(
    engine: Engine, tmp_path: Path
) -> None:
    """The view leaves a notebook's JSON lines (cell keys, outputs) blank; a snippet of 12 file
    lines showed 2 lines of code, then 9 blank ones (PythonDataScienceHandbook's 05.12, a hit on
    `GaussianMixture`). A run of blank lines shows as one and does not spend the window."""
    cells = [code(f"plot_gaussian_step_{n}(model, frame)", f"model = refit_step_{n}(model)",
                  outputs=[{"name": "stdout", "output_type": "stream", "text": ["done\n"] * 5}])
             for n in range(6)]
    text = nbformat4(cells)
    root = write_tree(tmp_path / "proj", {"gmm.ipynb": text})
    name = engine.add_collection(root).name
    engine.update([name])
    hit = engine.search("plot_gaussian_step_0", [name])[0]
    assert hit.line == file_line(text, "plot_gaussian_step_0")
    shown = hit.snippet.split("\n")
    assert all(a.strip() or b.strip() for a, b in zip(shown, shown[1:], strict=False))  # no blank run
    cells_lines = [(f"plot_gaussian_step_{n}(model, frame)", f"model = refit_step_{n}(model)")
                   for n in range(4)]
    assert [line for line in shown if line.strip()][:8] == [line for pair in cells_lines for line in pair]


def test_a_broken_notebook_gets_no_notebooks_size_cap(engine: Engine, tmp_path: Path) -> None:
    # the 8x cap is for a notebook's outputs, which its view leaves out; a `.ipynb` that does not
    # parse was indexed as JSON whole, megabytes of base64 included (dswalk's finding)
    broken = TRAINING[:-3]  # the plot's notebook, cut: no longer JSON
    root = write_tree(tmp_path / "proj", {"big.ipynb": broken, "ok.ipynb": TRAINING})
    name = engine.add_collection(root).name
    report = engine.update([name])[0]
    assert report.files == 1 and report.skipped == {"too_large": 1}
    assert [h.path for h in engine.search("fit_churn_classifier", [name])] == ["ok.ipynb"]


def test_a_long_source_line_is_stored_once_not_once_a_chunk() -> None:
    """A cell's data literal on one line is cut into many chunks; each chunk held the whole line
    (the file's lines from its start to its end): a 270 KB notebook stored 60 MB of chunk text."""
    literal = "data = [" + ", ".join(str(n) for n in range(40_000)) + "]"
    text = nbformat4([code("import numpy as np", literal, "print(len(data))"),
                      code("def summarise(values):", "    return sum(values)")])
    view = notebook_view(text)
    assert view is not None
    chunks = view.chunks("data.ipynb")
    row = file_line(text, "data = [")
    cut = [c for c in chunks if c.start_line == c.end_line == row]
    assert len(cut) > 10  # the line is cut, as in a .py file
    assert "".join(c.text for c in cut) == literal
    assert sum(len(c.text) for c in chunks) < 2 * len(literal)
    summarise = next(c for c in chunks if "def summarise" in c.text)
    assert summarise.start_line == file_line(text, "def summarise")


def test_a_notebook_on_one_line_is_read_once() -> None:
    """json.dumps without indent (a notebook some tools write): every cell on the file's one line.
    The blank line between two cells was that line again, so the script held the line once a cell
    (100 cells of 9 KB: 300 chunks, 0.9 MB of text)."""
    cells = [code(f"def step_{n}(x):", f"    return x + {n}") for n in range(100)]
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    view = notebook_view(text)
    assert view is not None and set(view.script_rows) == {1}
    chunks = view.chunks("flat.ipynb")
    assert sum(len(c.text) for c in chunks) <= len(view.text) + 200 * len(chunks)
    assert "\n".join(c.text for c in chunks).count("def step_7(x):") == 1
    # one cell a line: the blank between cells is blank, not the next cell's line again
    compact = '{"cells": [\n' + ",\n".join(json.dumps(c) for c in cells[:3]) + '\n], "metadata": {}}\n'
    view = notebook_view(compact)
    assert view is not None
    script = [c.text for c in view.chunks("compact.ipynb")]
    assert "\n".join(script).count("def step_1(x)") == 1


def test_source_lines_a_writer_put_on_one_line_are_chunked_as_code(engine: Engine, tmp_path: Path) -> None:
    """A notebook on one line (json.dumps without indent), and a cell written as one string: their
    source lines were joined by spaces into one line of code (`class Model:     def fit(self): ...`),
    so no definition was found and a question about one function got the whole notebook's line."""
    cells = [code(f"def step_{n}(x):", f"    return scale_{n}(x) + {n}") for n in range(60)]
    flat = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    one_string = nbformat4([
        markdown("# Model"),
        {"cell_type": "code", "execution_count": 1, "id": "s", "metadata": {}, "outputs": [],
         "source": "class ChurnModel:\n    def fit_churn_model(self, frame):\n        return frame\n"},
    ])
    for text in (flat, one_string):
        view = notebook_view(text)
        assert view is not None
        names = {d.name: d.line for c in view.chunks("n.ipynb") for d in c.definitions}
        if text is flat:
            assert {f"step_{n}" for n in range(60)} <= set(names) and set(names.values()) == {1}
        else:
            assert names["ChurnModel"] == names["fit_churn_model"] == file_line(text, "class ChurnModel")
    root = write_tree(tmp_path / "proj", {"flat.ipynb": flat, "one_string.ipynb": one_string})
    name = engine.add_collection(root).name
    engine.update([name])
    hit = engine.search("step_41", [name])[0]
    assert (hit.path, hit.line, hit.end_line) == ("flat.ipynb", 1, 1)
    assert hit.snippet.split("\n")[0] == "def step_41(x):", hit.snippet
    hit = engine.search("fit_churn_model", [name])[0]
    assert (hit.path, hit.line) == ("one_string.ipynb", file_line(one_string, "class ChurnModel"))


def test_a_lone_carriage_return_in_a_cell_is_no_traceback(engine: Engine, tmp_path: Path) -> None:
    """A cell's only line with an old Mac line break inside: the chunker split the one-line script
    on the "\\r" and mapped its second line past the view's rows (IndexError: the update failed)."""
    text = nbformat4([code("alpha_value = 1\rbeta_value = alpha_value + 1")])
    root = write_tree(tmp_path / "proj", {"mac.ipynb": text})
    name = engine.add_collection(root).name
    report = engine.update([name])[0]
    assert report.files == 1 and not report.skipped
    hits = engine.search("beta_value", [name])
    assert hits and hits[0].path == "mac.ipynb" and hits[0].line == file_line(text, "alpha_value")


def test_an_ascii_escaped_notebook_is_read_in_one_pass() -> None:
    """json.dump's default escapes every non-ASCII character. Each such cell line was looked for
    first as UTF-8, which such a file never holds: a search to the file's end (its outputs) a line,
    1.3 s for an 8.6 MB notebook of 2,000 such lines (0.02 s once looked for as the file spells it).
    Timed against parsing the same text with json.loads in the same test (a fixed bound in
    seconds failed under load): the view takes about 1.5-2x that, the unfixed reading 200x (54 s)."""
    plot = {"data": {"image/png": base64.b64encode(bytes(range(256)) * 5000).decode()},
            "metadata": {}, "output_type": "display_data"}
    cells = [code(*(f"café_{n}_{m} = 'naïve'" for m in range(10)), outputs=[plot] if n % 5 == 0 else [])
             for n in range(400)]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(notebook, indent=1)
    assert text.isascii() and len(text) > 8_000_000
    view = notebook_view(text)
    assert view is not None
    assert view.text.split("\n")[file_line(text, "caf\\u00e9_399_9") - 1] == "café_399_9 = 'naïve'"
    took = min(_seconds(notebook_view, text) for _ in range(2))
    parse = min(_seconds(json.loads, text) for _ in range(2))
    assert took < 6 * parse, f"{took:.2f} s against json.loads' {parse:.2f} s"


def _seconds(read: Callable[[str], object], text: str) -> float:
    began = time.perf_counter()
    read(text)
    return time.perf_counter() - began
