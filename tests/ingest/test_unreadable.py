"""Unreadable files and folders are skipped and counted; the rest of the collection is indexed.

Tests run as root here, and root reads whatever the modes say, so the update runs in a child
process as `nobody` (setpriv) on a tree in a world-readable temp folder: real permission errors
from the kernel, nothing patched."""

from __future__ import annotations

import json
import os
import pwd
import shutil
from pathlib import Path

import pytest

from tests.conftest import python_as_another_user, write_tree

UPDATE = """
import json, sys
from pathlib import Path

import pytest
from qmd_daemon.engine import Engine
engine = Engine()
name = engine.add_collection(Path(sys.argv[1])).name
report = engine.update([name])[0]
print(json.dumps({"report": report.as_dict(), "hits": [h.path for h in engine.search("fine_word")]}))
"""


def test_an_unreadable_folder_and_file_are_counted_and_the_rest_indexed(shared_tmp: Path) -> None:
    # issue 12 item 5: `mkdir d; echo x > d/b.py; chmod 400 d` aborted the whole collection
    root = write_tree(
        shared_tmp / "proj",
        {
            "ok.py": "def fine_word():\n    return 1\n",
            "d/b.py": "x = 1\n",
            "d/.gitignore": "*.tmp\n",
            "locked.py": "y = 2\n",
        },
    )
    (root / "locked.py").chmod(0o000)
    (root / "d").chmod(0o444)  # listable, not searchable: d/.gitignore and d/b.py cannot be opened

    proc = python_as_another_user(shared_tmp / "home", "-c", UPDATE, str(root))

    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["report"]["files"] == 1 and out["hits"] == ["ok.py"]
    # d/.gitignore (listed, but its folder cannot be searched), d/b.py and locked.py
    assert out["report"]["skipped"] == {"unreadable": 3}


UPDATE_BOTH = """
import json, sys
from pathlib import Path

import pytest
from qmd_daemon.engine import Engine
from qmd_daemon.errors import UsageError
from qmd_daemon.ingest.root_policy import check_root
engine = Engine()
for folder in sys.argv[1:]:
    engine.add_collection(Path(folder))
Path(sys.argv[1]).chmod(0)
reports = engine.update(keep_going=True)
try:
    check_root(Path(sys.argv[1]), on_demand=True)
    refusal = None
except UsageError as exc:
    refusal = str(exc)
print(json.dumps({"reports": [r.as_dict() for r in reports], "refusal": refusal,
                  "hits": [h.path for h in engine.search("fine_word")]}))
"""


def test_an_unreadable_collection_folder_is_reported_and_the_others_updated(shared_tmp: Path) -> None:
    # `chmod 000` on one collection's folder raised PermissionError from its .git lookup: the
    # update stopped before the other collections, and ai-search got the daemon's internal error
    locked = write_tree(shared_tmp / "locked", {"a.py": "def other_word():\n    return 1\n"})
    fine = write_tree(shared_tmp / "fine", {"ok.py": "def fine_word():\n    return 1\n"})
    if os.geteuid() == 0:  # the child, as nobody, registers both, then locks its own first one
        nobody = pwd.getpwnam("nobody")
        os.chown(locked, nobody.pw_uid, nobody.pw_gid)

    proc = python_as_another_user(shared_tmp / "home", "-c", UPDATE_BOTH, str(locked), str(fine))

    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    errors = {r["collection"]: r["error"] for r in out["reports"]}
    expected = f"cannot read {locked} (permission denied), so nothing in it was read"
    assert errors == {"locked": expected, "fine": None}
    assert out["refusal"] == expected
    assert out["hits"] == ["ok.py"]


UPDATE_GIT = """
import json, subprocess, sys
from pathlib import Path

import pytest
from qmd_daemon.engine import Engine
root = Path(sys.argv[1])
(root / "locked").mkdir(parents=True)
(root / "locked" / "b.py").write_text("def hidden_word():\\n    return 2\\n")
(root / "ok.py").write_text("def fine_word():\\n    return 1\\n")
subprocess.run(["git", "init", "-q", str(root)], check=True)
(root / "locked").chmod(0)
engine = Engine()
report = engine.update([engine.add_collection(root).name])[0]
print(json.dumps({"report": report.as_dict(), "hits": [h.path for h in engine.search("fine_word")]}))
"""


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git: the scan lists a repository with it")
def test_a_folder_git_cannot_list_is_counted_in_a_repository(shared_tmp: Path) -> None:
    # `git ls-files --others` only warns about a folder it cannot open (exit 0): the untracked
    # files in it were left out without a word, where the walk outside git counts the folder
    shared_tmp.chmod(0o777)  # the child, another user, makes the repository (git wants its owner)
    proc = python_as_another_user(shared_tmp / "home", "-c", UPDATE_GIT, str(shared_tmp / "repo"),
                                  env={"LANG": "de_DE.UTF-8"})

    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["report"]["files"] == 1 and out["hits"] == ["ok.py"]
    assert out["report"]["skipped"] == {"unreadable_dir": 1}


UPDATE_BEHIND = """
import json, sys
from pathlib import Path

from qmd_daemon.engine import Engine
engine = Engine()
for folder in sys.argv[2:]:
    engine.add_collection(Path(folder))
engine.update()
Path(sys.argv[1]).chmod(0)
reports = engine.update(keep_going=True)
gone = {c["name"]: c["folder_gone"] for c in engine.status()["collections"]}
print(json.dumps({"reports": [r.as_dict() for r in reports], "gone": gone,
                  "hits": [h.path for h in engine.search("fine_word")]}))
"""


def test_a_collection_behind_an_unreadable_folder_is_reported_and_the_others_updated(
    shared_tmp: Path,
) -> None:
    # its folder's parent made unreadable (a share whose access was taken away): stat() of the
    # folder itself fails with EACCES, which Path.is_dir raises; every update first asks whether
    # each collection is a removed git worktree, so that one folder stopped every collection's update
    outer = shared_tmp / "outer"
    inner = write_tree(outer / "inner", {"a.py": "def other_word():\n    return 1\n"})
    fine = write_tree(shared_tmp / "fine", {"ok.py": "def fine_word():\n    return 1\n"})
    if os.geteuid() == 0:  # the child, as nobody, registers both, then locks the first one's parent
        nobody = pwd.getpwnam("nobody")
        os.chown(outer, nobody.pw_uid, nobody.pw_gid)

    proc = python_as_another_user(shared_tmp / "home", "-c", UPDATE_BEHIND, str(outer), str(inner), str(fine))

    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    errors = {r["collection"]: r["error"] for r in out["reports"]}
    expected = f"cannot read {inner} (permission denied), so nothing in it was read"
    assert errors == {"inner": expected, "fine": None}
    assert out["gone"] == {"inner": False, "fine": False}, "out of reach is not moved or deleted"
    assert out["hits"] == ["ok.py"]
