"""bench/definition_first.py on a real index: it finds a definition cut into windows, searches its
bare name, and reports a miss with the definition's kind and the first hit."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import definition_first
from tests.conftest import indexed

# A function long enough to be cut into windows (over 40 lines), then a file that only calls it.
_BODY = "\n".join(f"  total += step_{i}(grid, {i});" for i in range(60))
GRID_C = f"int regrid(struct grid *grid) {{\n  int total = 0;\n{_BODY}\n  return total;\n}}\n"
MAIN_C = "int main(void) {\n  struct grid g;\n  return regrid(&g);\n}\n"


def test_a_defined_name_is_found_first(engine, home: Path, tmp_path: Path, capsys) -> None:
    indexed(engine, tmp_path / "grid", {"src/grid.c": GRID_C, "src/main.c": MAIN_C})
    assert definition_first.main(["--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert out.split("\n")[1].split() == ["c", "1", "1", "1", "1"]
    assert "misses (0):" in out


def test_no_index_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert definition_first.main(["--home", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"no index at {tmp_path / 'cache' / 'index.sqlite'}"


def test_the_lower_case_probe_takes_plain_words_of_any_length(
    engine, home: Path, tmp_path: Path, capsys
) -> None:
    small = "int cell_count(void) { return 0; }\nint tiny(void) { return 1; }\n"
    indexed(engine, tmp_path / "grid", {"src/grid.c": GRID_C, "src/main.c": MAIN_C, "src/small.c": small})
    assert definition_first.main(["--home", str(home), "--probe", "lower"]) == 0
    out = capsys.readouterr().out
    # regrid (long), main and tiny (short) are plain words, each found first; cell_count has a `_`
    assert out.split("\n")[1].split() == ["c", "3", "3", "3", "3"]
