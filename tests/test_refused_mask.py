"""A collection whose mask an older version accepted but today's `compile_mask` refuses (an
unclosed `[` once registered and indexed nothing): every command failed after the upgrade, the
other collections with it. Now one line names that collection and its fix, the others update,
search and show in `status`, and the fix brings it back. Real CLI, real index, real daemon API
resolution (engine.collection_at, what /search calls) for a search made inside its folder.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
import yaml

from qmd_daemon.daemon.server import Daemon
from qmd_daemon.engine import Engine
from qmd_daemon.errors import ConfigError
from qmd_daemon.settings import Settings
from tests.conftest import run_cli, write_tree
from tests.daemon.support import make_repo, run_client, state_of

LINE = ("qmd-daemon: collection 'old' is skipped: its mask '**/*.py[' is no longer accepted (a '[' that no "
        "']' closes (write '\\[' for the character itself)); give it a valid one: qmd-daemon collection "
        "add {path} --mask 'GLOBS'")


@pytest.fixture
def two(home: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Collections `good` and `old`, both indexed; then `old`'s mask written as an older version
    let it be (index.yml edited by hand, as the older code had saved it)."""
    good = write_tree(tmp_path / "good", {"walrus.py": "def walrus_tusk():\n    return 1\n"})
    old = write_tree(tmp_path / "old", {"narwhal.py": "def narwhal_horn():\n    return 2\n"})
    run_cli("collection", "add", str(good), "--name", "good", env_home=home, check=True)
    run_cli("collection", "add", str(old), "--name", "old", env_home=home, check=True)
    run_cli("update", env_home=home, check=True)
    config_file = home / "config" / "index.yml"
    raw = yaml.safe_load(config_file.read_text())
    raw["collections"]["old"]["pattern"] = "**/*.py["
    config_file.write_text(yaml.safe_dump(raw))
    return good, old


def _clean(proc: object, code: int) -> str:
    assert proc.returncode == code, (proc.stdout, proc.stderr)  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]
    return str(proc.stderr)  # type: ignore[attr-defined]


def test_the_other_collections_keep_working_and_the_line_names_the_fix(
    home: Path, two: tuple[Path, Path]
) -> None:
    good, old = two
    line = LINE.format(path=old.resolve())
    (good / "more.py").write_text("def walrus_whisker():\n    return 3\n")
    update = run_cli("update", env_home=home)
    assert _clean(update, 1).splitlines() == [line]
    assert "good:" in update.stdout and "old:" not in update.stdout  # the other one was updated
    found = run_cli("search", "walrus_whisker", "-c", "good", "--json", env_home=home)
    _clean(found, 0)
    assert "more.py" in found.stdout
    named = run_cli("update", "-c", "old", env_home=home)
    assert line.removeprefix("qmd-daemon: ") in _clean(named, 1)
    status = run_cli("status", env_home=home)
    assert _clean(status, 0).splitlines() == [line]
    assert "another home's" not in status.stdout
    assert any(row.strip().startswith("old:") and "is skipped" in row for row in status.stdout.splitlines())
    # the fix the line gives: the collection is back, with its index
    fixed = run_cli("collection", "add", str(old), "--mask", "**/*.py", env_home=home)
    assert _clean(fixed, 0).splitlines() == [line]  # still true as it started
    assert run_cli("update", env_home=home, check=True).stderr == ""
    again = run_cli("search", "narwhal_horn", "-c", "old", "--json", env_home=home, check=True)
    assert "narwhal.py" in again.stdout


def test_a_search_inside_its_folder_says_it_and_registers_nothing(
    home: Path, two: tuple[Path, Path]
) -> None:
    """ai-search's daemon resolves the folder (collection_at) and registers a folder no collection
    covers: that would have replaced the user's mask with the default behind their back."""
    _good, old = two
    engine = Engine()
    try:
        with pytest.raises(ConfigError) as info:
            engine.collection_at(old / "sub")
        assert str(info.value) == LINE.format(path=old.resolve()).removeprefix("qmd-daemon: ")
        with pytest.raises(ConfigError):
            engine.add_collection(old, on_demand=True)
        assert "**/*.py[" in (home / "config" / "index.yml").read_text()  # left as the user wrote it
        assert engine.collection_at(_good) is not None
    finally:
        engine.close()


def test_its_fix_keeps_its_ignore_list_and_include_by_default(home: Path, tmp_path: Path) -> None:
    """`collection add PATH --mask GLOBS`, the fix the line names, reset `ignore:` to empty and
    `includeByDefault` to false: files the user had left out came back into the index."""
    old = write_tree(tmp_path / "old", {"keep.py": "def kept_walrus():\n    pass\n",
                                        "vendor/lib.py": "def vendored_walrus():\n    pass\n"})
    run_cli("collection", "add", str(old), "--name", "old", "--ignore", "vendor/",
            "--default", env_home=home, check=True)  # fmt: skip
    config_file = home / "config" / "index.yml"
    raw = yaml.safe_load(config_file.read_text())
    raw["collections"]["old"]["pattern"] = "**/*.py["
    config_file.write_text(yaml.safe_dump(raw))
    _clean(run_cli("collection", "add", str(old), "--mask", "**/*.py", env_home=home), 0)
    entry = yaml.safe_load(config_file.read_text())["collections"]["old"]
    assert (entry["pattern"], entry["ignore"], entry["includeByDefault"]) == ("**/*.py", ["vendor/"], True)
    run_cli("update", env_home=home, check=True)
    found = run_cli("search", "vendored_walrus", "-c", "old", "--json", env_home=home, check=True)
    assert "vendor/lib.py" not in found.stdout
    # an --ignore given with the fix still replaces the list
    _clean(run_cli("collection", "add", str(old), "--mask", "**/*.py", "--ignore", "none/",
                   env_home=home), 0)  # fmt: skip
    assert yaml.safe_load(config_file.read_text())["collections"]["old"]["ignore"] == ["none/"]


def test_its_name_stays_taken(home: Path, two: tuple[Path, Path], tmp_path: Path) -> None:
    """A set-aside collection's name is not free: another folder called `old` (or asked to be
    named `old`) took over its index.yml entry, and the set-aside collection was lost."""
    _good, old = two
    other = write_tree(tmp_path / "elsewhere" / "old", {"seal.py": "def seal_flipper():\n    pass\n"})
    added = run_cli("collection", "add", str(other), "--no-update", env_home=home)
    _clean(added, 0)
    assert added.stdout.split()[1] == "old-elsewhere"
    named = run_cli("collection", "add", str(other), "--name", "old", "--no-update", env_home=home)
    assert "collection 'old' already exists for" in _clean(named, 2)
    raw = yaml.safe_load((home / "config" / "index.yml").read_text())
    assert raw["collections"]["old"]["path"] == str(old.resolve())  # the set-aside entry, untouched
    assert raw["collections"]["old"]["pattern"] == "**/*.py["


def test_ai_search_inside_its_folder_is_the_daemons_one_line(
    home: Path, daemon_home: Path, tmp_path: Path
) -> None:
    """The daemon answered a search inside a set-aside collection with HTTP 500, a server fault;
    it is the user's index.yml: 409 config_error, and ai-search prints the line and exits 1
    without trying an in-process search (that reads the same index.yml and fails the same way)."""
    repo = make_repo(tmp_path / "old")
    run_cli("collection", "add", str(repo), "--name", "old", env_home=home, check=True)
    config_file = home / "config" / "index.yml"
    raw = yaml.safe_load(config_file.read_text())
    raw["collections"]["old"]["pattern"] = "**/*.py["
    config_file.write_text(yaml.safe_dump(raw))
    proc = run_client("ai_search.py", "parse cookie header", home=daemon_home, cwd=repo / "src")
    assert proc.returncode == 1 and proc.stdout == ""
    line = LINE.format(path=repo.resolve()).removeprefix("qmd-daemon: ")
    assert proc.stderr.splitlines() == [f"ai-search: error: {line}"]
    assert state_of(daemon_home) is not None  # the daemon answered it
    log = (daemon_home / "state" / "logs" / "daemon.log").read_text()
    assert "Traceback" not in log
    alone = run_client("ai_search.py", "parse cookie header", "--no-daemon", home=daemon_home, cwd=repo)
    assert (alone.returncode, alone.stderr.splitlines()) == (1, [f"ai-search: error: {line}"])


async def test_the_daemon_names_it_with_its_fix_when_a_search_names_it(
    home: Path, two: tuple[Path, Path]
) -> None:
    """`ai-search -c old` through the daemon answered "no collection named 'old'" (404), while
    every CLI command gave the line with the fix; the collection is in index.yml."""
    _good, old = two
    daemon = Daemon(Settings.from_env(), watch=False, idle_minutes=30)
    await daemon.start()
    try:
        body = {"query": "narwhal", "collections": ["old"]}
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"http://127.0.0.1:{daemon.port}/search", json=body,
                      headers={"Authorization": f"Bearer {daemon.token}"}) as resp,
        ):
            status, answer = resp.status, await resp.json()
    finally:
        await daemon.close()
    assert (status, answer["error"]["code"]) == (409, "config_error")
    assert answer["error"]["message"] == LINE.format(path=old.resolve()).removeprefix("qmd-daemon: ")
