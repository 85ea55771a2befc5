"""Pure functions of the setup: instruction block, hook-entry merge, journal rollback."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.setup import integrations as integ
from qmd_daemon.setup.journal import Journal
from qmd_daemon.setup.paths import SetupPaths


def test_instruction_block_round_trips():
    for original in ("", "# Rules\n", "# Rules\n\nBe brief.\n"):
        added = integ.with_instruction(original)
        assert integ.INSTRUCTION in added
        assert integ.with_instruction(added) == added  # idempotent
        assert integ.without_instruction(added) == (original or "\n")


def test_hook_entries_are_merged_and_only_ours_are_stripped():
    mine = {"hooks": [{"type": "command", "command": "echo mine"}]}
    ours = {"matcher": "startup", "hooks": [{"type": "command", "command": "sh /x/qmd-session-start.sh"}]}
    mixed = {
        "hooks": [
            {"type": "command", "command": "echo a"},
            {"type": "command", "command": "sh '/x/qmd-auto-retrieve.sh'"},
            {"type": "command", "command": "my qmd-session-start-wrapper thing"},
        ]
    }
    stripped = integ._strip_ours({"SessionStart": [mine, ours], "UserPromptSubmit": [mixed], "Stop": [ours]})
    assert stripped == {
        "SessionStart": [mine],
        "UserPromptSubmit": [
            {
                "hooks": [
                    {"type": "command", "command": "echo a"},
                    {"type": "command", "command": "my qmd-session-start-wrapper thing"},
                ]
            }
        ],
    }


def test_json_is_rewritten_in_the_files_own_style():
    assert integ._dump_like({"a": 1}, '{"b": 2}') == '{"a": 1}'
    assert integ._dump_like({"a": 1}, '{\n    "b": 2\n}\n') == '{\n    "a": 1\n}\n'


def test_journal_rollback_restores_files_and_removes_new_folders(tmp_path: Path):
    existing = tmp_path / "kept.txt"
    existing.write_text("old")
    journal = Journal(echo=lambda _: None)
    journal.write_file(existing, "new")
    journal.write_file(tmp_path / "a" / "b" / "new.txt", "x")
    assert journal.rollback() == []
    assert existing.read_text() == "old"
    assert not (tmp_path / "a").exists()


def test_the_codex_trust_step_names_every_hook_the_run_added():
    # with --auto-retrieve the prompt hook needs the user's trust in Codex too; the line named
    # only qmd-session-start, so the opt-in hook stayed off there without a word
    for auto_retrieve in (False, True):
        h = Path("/h")
        folders = ("config", "state", "models", "data", "bin", ".claude", ".codex")
        paths = SetupPaths(h, *(h / name for name in folders))
        wanted = integ.desired_hooks(paths, auto_retrieve)
        note = integ.codex_trust_note(auto_retrieve)
        for event, groups in wanted.items():
            for group in groups:
                for hook in group["hooks"]:
                    name = next(n for n in integ.OUR_HOOK_NAMES if n in hook["command"])
                    assert name in note, (event, note)
        assert (integ.RETRIEVE_HOOK in note) == auto_retrieve
