"""What may become a collection (issue 12 item 7, issue 13): never a whole disk or home, never a
credential folder, only a git repository inside ~/.config, and nothing past the size caps without
the user lifting them. Through the real CLI, with HOME pointing at a home folder in tmp_path."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from qmd_daemon.errors import UsageError
from qmd_daemon.ingest.root_policy import Missing, check_size, missing_reason, tally_to_cap
from qmd_daemon.settings import DEFAULT_MASK, Settings
from tests.conftest import run_cli, write_tree


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    home = tmp_path / "users" / "alice"
    write_tree(home, {
        ".ssh/id_ed25519": "PRIVATE KEY\n", ".ssh/keys/old.pem": "PRIVATE\n", ".aws/credentials": "[x]\n",
        ".config/gh/hosts.yml": "oauth_token: gho_secret\n", ".local/state/qmd/daemon.json": "{}\n",
        ".config/nvim/init.lua": "vim.o.number = true\n", "src/app/main.py": "def main():\n    pass\n",
    })  # fmt: skip
    subprocess.run(["git", "init", "-q", str(home / ".config" / "nvim")], check=True)
    return home


def add(path: Path, home: Path, user_home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli("collection", "add", str(path), env_home=home, HOME=str(user_home), **env)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("", "as a whole"),  # the home folder
        ("..", "as a whole"),  # the folder above it (/home)
        ("../..", "as a whole"),
        (".ssh", "holds credentials"),
        (".ssh/keys", "holds credentials"),
        (".aws", "holds credentials"),
        (".config", "holds settings"),
        (".config/gh", "holds settings"),  # not a git repository
        (".local/state", "holds settings"),
    ],
)
def test_secrets_and_whole_homes_are_refused(tmp_path: Path, user_home: Path, where: str, why: str) -> None:
    home = tmp_path / "qmd-home"
    line = one_line_error(add((user_home / where).resolve(), home, user_home))
    assert "refusing to index" in line and why in line
    config = home / "config" / "index.yml"
    assert not config.exists() or "collections" not in config.read_text()


def test_a_git_repository_in_config_and_a_plain_folder_can_be_added(tmp_path: Path, user_home: Path) -> None:
    home = tmp_path / "qmd-home"
    for path in (user_home / ".config" / "nvim", user_home / "src" / "app"):
        proc = add(path, home, user_home)
        assert proc.returncode == 0, proc.stderr
    listed = run_cli("collection", "list", "--json", env_home=home, HOME=str(user_home), check=True).stdout
    assert "nvim" in listed and "app" in listed


def test_size_caps_name_their_override(tmp_path: Path) -> None:
    home = tmp_path / "qmd-home"
    tree = write_tree(tmp_path / "dump", {f"f{i}.py": f"def f{i}():\n    return {i}\n" for i in range(5)})
    line = one_line_error(run_cli("collection", "add", str(tree), env_home=home,
                                  QMD_MAX_COLLECTION_FILES="3"))
    assert "over 3 files to index (the cap)" in line and "QMD_MAX_COLLECTION_FILES=0" in line
    write_tree(tree, {"big1.txt": "x" * 900_000 + "\n", "big2.txt": "y" * 900_000 + "\n"})
    line = one_line_error(run_cli("collection", "add", str(tree), env_home=home, QMD_MAX_COLLECTION_MB="1"))
    assert "over 1 MB to index (the cap)" in line and "QMD_MAX_COLLECTION_MB=0" in line
    proc = run_cli("collection", "add", str(tree), env_home=home, QMD_MAX_COLLECTION_FILES="0",
                   QMD_MAX_COLLECTION_MB="0")
    assert proc.returncode == 0, proc.stderr
    assert "5 files (5 added" in proc.stdout  # the two long-line files are skipped as minified
    # an existing collection is not measured again: the caps guard a new root, not each update
    again = run_cli("collection", "add", str(tree), env_home=home, QMD_MAX_COLLECTION_FILES="3")
    assert again.returncode == 0, again.stderr


def _tree_of(folder: Path, files: int) -> Path:
    """`files` small files in folders of 100 (no git: the scan walks it, folder by folder)."""
    return write_tree(folder, {f"d{i // 100}/f{i}.py": f"F{i} = {i}\n" for i in range(files)}).resolve()


def test_the_count_stops_once_a_cap_is_passed(tmp_path: Path) -> None:
    # review item C: the whole tree was listed to say no; one past the cap already says it
    settings = replace(Settings.from_env(), max_collection_files=20, max_collection_mb=0)
    tree = _tree_of(tmp_path / "big", 600)
    files, size = tally_to_cap(tree, settings, mask=DEFAULT_MASK, ignore=[])
    assert files == 21 and size < 21 * 20  # stopped one past the cap: 21 of 600 files of <20 bytes
    lifted = replace(settings, max_collection_files=0)
    assert tally_to_cap(tree, lifted, mask=DEFAULT_MASK, ignore=[])[0] == 600


def test_a_refusal_is_remembered_so_asking_again_lists_nothing(tmp_path: Path) -> None:
    # review item C: every ai-search in a refused tree listed it again on the daemon's reader thread
    settings = replace(Settings.from_env(), max_collection_files=3)
    tree = _tree_of(tmp_path / "dump", 5)
    with pytest.raises(UsageError, match="over 3 files"):
        check_size(tree, settings, mask=DEFAULT_MASK, ignore=[])
    shutil.rmtree(tree / "d0")  # the tree now fits, but the answer is the remembered one
    with pytest.raises(UsageError, match="over 3 files"):
        check_size(tree, settings, mask=DEFAULT_MASK, ignore=[])
    check_size(tree, settings, mask="**/*.md", ignore=[])  # another question is measured afresh


def test_a_missing_root_is_told_by_kind_not_by_its_words(tmp_path: Path) -> None:
    """The indexer adds "(moved or deleted?)" for a folder that is gone and not for a link loop: it
    compared the message text, so rewording one would have changed which paths get the hint."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert missing_reason(tmp_path / "a") is Missing.LINK_LOOP
    assert missing_reason(tmp_path / "a" / "src") is Missing.LINK_LOOP  # a path through the loop
    assert missing_reason(tmp_path / "gone") is Missing.GONE
