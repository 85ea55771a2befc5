"""A git repository inside another one's folder (a submodule, a worktree or clone checked out in
it) is searched as its own collection: the outer repository's git listing never holds its files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import write_tree
from tests.daemon.support import make_repo, run_client

GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "protocol.file.allow=always"]


def _git(root: Path, *args: str) -> None:
    subprocess.run([*GIT, "-C", str(root), *args], check=True)


def _commit(root: Path) -> None:
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "c")


def _search(query: str, home: Path, cwd: Path) -> list[dict[str, str]]:
    proc = run_client("ai_search.py", query, "--json", "--no-daemon", home=home, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_submodule_and_an_inner_worktree_are_collections_of_their_own(
    daemon_home: Path, tmp_path: Path
) -> None:
    outer = make_repo(tmp_path / "outer")
    _commit(outer)
    library = make_repo(tmp_path / "library", {"lib/walrus.py": "def walrus_tusk_length():\n    return 3\n"})
    _commit(library)
    _git(outer, "submodule", "add", "-q", str(library), "vendor/library")
    _commit(outer)
    _git(outer, "worktree", "add", "-q", "-b", "feature", ".worktrees/feature")
    feature = outer / ".worktrees" / "feature"
    write_tree(feature, {"src/feature_only.py": "def narwhal_horn_feature():\n    return 1\n"})

    assert _search("pool", daemon_home, outer)[0]["collection"] == "repo-outer"  # outer registered first
    in_submodule = _search("walrus_tusk_length", daemon_home, outer / "vendor" / "library")
    assert in_submodule[0]["path"] == "lib/walrus.py"
    assert in_submodule[0]["collection"] == "repo-library"
    in_worktree = _search("narwhal_horn_feature", daemon_home, feature / "src")
    assert in_worktree[0]["path"] == "src/feature_only.py"
    assert in_worktree[0]["collection"] == "repo-feature"
    # the outer repository's search is unchanged: its own files, none of the nested ones
    assert {hit["collection"] for hit in _search("walrus narwhal pool", daemon_home, outer)} == {"repo-outer"}
