"""A checked-out submodule is part of the outer repository's collection, as ripgrep and editors
search it; a worktree or clone checked out inside a repository is a collection of its own: the
outer repository's git listing never holds its files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from clients import _qmd_client as qc
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


def test_a_submodule_is_searched_with_its_repository_and_an_inner_worktree_on_its_own(
    daemon_home: Path, tmp_path: Path
) -> None:
    outer = make_repo(tmp_path / "outer")
    _commit(outer)
    library = make_repo(
        tmp_path / "library",
        {".gitignore": "generated/\n", "lib/walrus.py": "def walrus_tusk_length():\n    return 3\n"},
    )
    _commit(library)
    _git(outer, "submodule", "add", "-q", str(library), "third_party/library")
    _commit(outer)
    checkout = outer / "third_party" / "library"
    write_tree(checkout, {"generated/walrus_copy.py": "def walrus_tusk_copy(): ...\n"})
    _git(outer, "worktree", "add", "-q", "-b", "feature", ".worktrees/feature")
    feature = outer / ".worktrees" / "feature"
    write_tree(feature, {"src/feature_only.py": "def narwhal_horn_feature():\n    return 1\n"})

    from_outer = _search("walrus_tusk_length", daemon_home, outer)
    assert from_outer[0]["collection"] == "repo-outer"
    assert from_outer[0]["path"] == "third_party/library/lib/walrus.py"
    in_submodule = _search("walrus_tusk_length", daemon_home, checkout)
    assert {hit["collection"] for hit in in_submodule} == {"repo-outer"}  # not indexed a second time
    # ai-search's paths are the submodule's, where it runs (docs/troubleshooting.md said the outer root's)
    assert in_submodule[0]["path"] == "lib/walrus.py"
    in_worktree = _search("narwhal_horn_feature", daemon_home, feature / "src")
    assert in_worktree[0]["path"] == "src/feature_only.py"
    assert in_worktree[0]["collection"] == "repo-feature"
    # the outer repository's search: its own files and its submodule's (without what the submodule's
    # .gitignore leaves out), none of the worktree's
    found = _search("walrus narwhal pool", daemon_home, outer)
    assert {hit["collection"] for hit in found} == {"repo-outer"}
    assert not any("generated/" in hit["path"] for hit in found)
    # an edit inside the submodule reaches the next search, and the stamp a client checks before
    # asking for a refresh (repo_signature) sees it: the outer listing shows only the folder
    before = qc.repo_signature(str(outer))
    with (checkout / "lib" / "walrus.py").open("a") as walrus:
        walrus.write("# longer\n")
    assert qc.repo_signature(str(outer)) != before
    (checkout / "lib" / "tusk.py").write_text("def tusk_polish_wax():\n    return 1\n")
    fresh = _search("tusk_polish_wax", daemon_home, outer)
    assert fresh[0]["path"] == "third_party/library/lib/tusk.py"


def test_the_stamp_made_inside_a_submodule_sees_an_edit_outside_it(tmp_path: Path) -> None:
    """A search made inside a submodule is answered by the outer repository's collection, which
    refreshes as a whole: the client's freshness signature covers the outer listing, else an edit
    next to the submodule was never asked to be refreshed (no watcher: macOS, network folders)."""
    outer = make_repo(tmp_path / "outer")
    _commit(outer)
    library = make_repo(tmp_path / "library", {"lib/walrus.py": "def walrus_tusk_length():\n    return 3\n"})
    _commit(library)
    _git(outer, "submodule", "add", "-q", str(library), "third_party/library")
    _commit(outer)
    checkout = str(outer / "third_party" / "library")
    assert qc.repo_root(checkout) == (checkout, True)  # the submodule is its own git top level
    before = qc.repo_signature(checkout)
    (outer / "src" / "client.py").write_text("def seal_flipper_count():\n    return 2\n")
    assert qc.repo_signature(checkout) != before
    # a clone merely lying inside a repository (not declared in .gitmodules) keeps its own listing
    clone = make_repo(outer / "scratch")
    _commit(clone)
    before = qc.repo_signature(str(clone))
    (outer / "src" / "client.py").write_text("def seal_flipper_count():\n    return 3\n")
    assert qc.repo_signature(str(clone)) == before
