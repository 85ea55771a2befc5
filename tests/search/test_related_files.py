"""Each hit carries the files related to its own (the docs citing a code file), wherever in the
ranked candidates it was found. Real index of a temp tree."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchOptions
from tests.conftest import indexed


def _function(n: int) -> str:
    body = "".join(f"    step_{n}_{i} = frobnicate(frobnicate(value, {i}), frobnicate)\n" for i in range(25))
    return f"def frobnicate_{n}(value):\n    '''frobnicate frobnicate'''\n{body}    return value\n\n\n"


def test_a_hit_found_past_the_leading_candidates_still_has_its_related_files(
    engine: Engine, tmp_path: Path
) -> None:
    # heavy.py's chunks fill the leading candidates; per_file=1 shows one of them, and the second
    # hit, NOTES.md (a long doc saying the word once), is found past the first limit*3 candidates.
    # Related files used to be read for those leading candidates' files only, so it came back
    # without the code file it cites.
    filler = " ".join(f"word{i}" for i in range(400))
    name = indexed(engine, tmp_path / "repo", {
        "heavy.py": "".join(_function(n) for n in range(12)),
        "other.py": "def other(value):\n    return value\n",
        "NOTES.md": f"# Notes\n\n{filler} frobnicate, see `other.py`.\n",
    })
    # without boosts (no per-file saturation) heavy.py's chunks all rank above the doc
    ranked = SearchOptions(per_file=0, boosts=False)
    everything = engine.search("frobnicate", [name], limit=50, options=ranked)
    rank = [h.path for h in everything].index("NOTES.md")  # as ranked: per_file=0 skips none
    assert rank >= 6, f"the tree must put NOTES.md past 2 * 3 candidates, not at {rank}"
    hits = engine.search("frobnicate", [name], limit=2, options=SearchOptions(per_file=1, boosts=False))
    assert [h.path for h in hits] == ["heavy.py", "NOTES.md"]
    assert "other.py" in hits[1].related
