"""`qmd-daemon demo`, the README's main job: it answers its questions from a throwaway index and
leaves the user's own folders and a configured team index alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.demo import run_demo


def test_demo_answers_from_a_throwaway_index_and_writes_nothing_of_the_users(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A team index the demo must not write to: nothing listens on port 1, so any use would fail.
    monkeypatch.setenv("QMD_DATABASE_URL", "postgresql://127.0.0.1:1/team")
    lines: list[str] = []

    assert run_demo(lines.append, questions=("IndexStore",)) == 0

    assert lines[0].startswith("indexed ") and " files (" in lines[0]
    question = lines.index("\n? IndexStore")
    first_hit = lines[question + 1].split()
    assert first_hit[1].startswith("store/index_store.py:") and first_hit[2] == "IndexStore"
    assert not home.exists()  # no config, state (skip log, locks) or index of the user's
