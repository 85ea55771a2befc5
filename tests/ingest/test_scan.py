import os
import subprocess
from pathlib import Path

from qmd_daemon.config import expand_braces
from qmd_daemon.ingest.scan import is_submodule, scan, submodule_folders
from qmd_daemon.settings import DEFAULT_EXCLUDES, DEFAULT_MASK
from tests.conftest import write_tree


def _scan(root: Path, **kw) -> list[str]:
    params = {"mask": DEFAULT_MASK, "ignore": [], "excludes": DEFAULT_EXCLUDES, "max_file_bytes": 1 << 20}
    params.update(kw)
    return [f.path for f in scan(root, **params).files]


def test_expand_braces() -> None:
    assert expand_braces("**/*.{md,py}") == ["**/*.md", "**/*.py"]
    assert expand_braces("{a,b}/{c,d}") == ["a/c", "a/d", "b/c", "b/d"]


def test_walk_applies_nested_gitignore_and_builtin_excludes(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            ".gitignore": "*.log\nsecret/\n",
            "src/a.py": "x = 1\n",
            "src/.gitignore": "gen_*.py\n",
            "src/gen_b.py": "y = 2\n",
            "secret/k.py": "z\n",
            "node_modules/m/index.js": "module.exports = 1\n",
            "notes.log.md": "kept: a .md even though *.log exists\n",
            "image.png": "not in mask",
        },
    )
    assert _scan(tmp_path) == ["notes.log.md", "src/a.py"]


def test_git_repository_uses_git_ignore_rules(tmp_path: Path) -> None:
    write_tree(tmp_path, {".gitignore": "ignored.py\n", "a.py": "1\n", "ignored.py": "2\n", "new.py": "3\n"})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.py"], check=True)
    assert _scan(tmp_path) == ["a.py", "new.py"]


def test_user_ignore_mask_and_size_limit(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a.py": "1\n", "b.md": "2\n", "gen/c.py": "3\n", "big.py": "x" * 5000})
    result = scan(tmp_path, mask="**/*.py", ignore=["gen/"], excludes=(), max_file_bytes=1000)
    assert [f.path for f in result.files] == ["a.py"]
    assert result.skipped["too_large"] == 1


def test_symlinks_never_leave_the_root_and_loops_end(tmp_path: Path) -> None:
    outside = write_tree(tmp_path / "outside", {"secret.py": "password = 1\n"})
    root = write_tree(tmp_path / "root", {"a.py": "1\n"})
    os.symlink(outside / "secret.py", root / "leak.py")
    os.symlink(outside, root / "leakdir")
    os.symlink(root, root / "loop")
    os.symlink(root / "a.py", root / "alias.py")
    result = scan(root, mask=DEFAULT_MASK, ignore=[], excludes=(), max_file_bytes=1 << 20)
    assert [f.path for f in result.files] == ["a.py", "alias.py"]
    assert result.skipped["symlink_outside_root"] == 1


def test_repository_config_never_runs_a_program(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a.py": "1\n"})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    marker = tmp_path.parent / "fsmonitor-ran"
    subprocess.run(
        ["git", "-C", str(tmp_path), "config", "core.fsmonitor", f"touch {marker}; false #"], check=True
    )
    assert _scan(tmp_path) == ["a.py"]
    assert not marker.exists()


def test_file_names_that_are_not_utf8_are_counted_not_fatal(tmp_path: Path) -> None:
    write_tree(tmp_path, {"ok.py": "1\n"})
    (tmp_path / os.fsdecode(b"bad\xff.py")).write_text("2\n")
    result = scan(tmp_path, mask=DEFAULT_MASK, ignore=[], excludes=(), max_file_bytes=1 << 20)
    assert [f.path for f in result.files] == ["ok.py"]
    assert result.skipped["undecodable_name"] == 1


def test_a_gitignore_rewritten_between_scans_with_the_same_size_and_mtime_is_obeyed(tmp_path: Path) -> None:
    """Compiled .gitignore patterns are kept between scans by their text, never by the file's stat."""
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    for name in ("a.py", "b.py"):
        (root / "src" / name).write_text("x = 1\n")
    ignore_file = root / "src" / ".gitignore"
    ignore_file.write_text("a.py\n")
    stamp = ignore_file.stat().st_mtime_ns

    def scanned() -> list[str]:
        result = scan(root, mask="**/*.py", ignore=[], excludes=(), max_file_bytes=10**6)
        return [f.path for f in result.files]

    assert scanned() == ["src/b.py"]
    ignore_file.write_text("b.py\n")
    os.utime(ignore_file, ns=(stamp, stamp))
    assert scanned() == ["src/a.py"]


_GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "protocol.file.allow=always"]


def _repo(root: Path, files: dict[str, str]) -> Path:
    write_tree(root, files)
    subprocess.run([*_GIT, "init", "-q", str(root)], check=True)
    subprocess.run([*_GIT, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*_GIT, "-C", str(root), "commit", "-qm", "c"], check=True)
    return root


def test_checked_out_submodules_are_listed_with_their_own_ignore_rules(tmp_path: Path) -> None:
    """git's listing of the outer repository stops at a submodule: its files were in no collection
    though ripgrep and editors search them. An uninitialised one is an empty folder: absent."""
    deep = _repo(tmp_path / "deep", {"d.py": "1\n"})
    inner = _repo(tmp_path / "inner", {".gitignore": "build/\n", "src/a.py": "1\n"})
    subprocess.run([*_GIT, "-C", str(inner), "submodule", "add", "-q", str(deep), "sub"], check=True)
    subprocess.run([*_GIT, "-C", str(inner), "commit", "-qm", "sub"], check=True)
    unused = _repo(tmp_path / "unused", {"u.py": "1\n"})
    outer = _repo(tmp_path / "outer", {"o.py": "1\n"})
    for source, folder in ((inner, "libs/inner"), (unused, "unused")):
        subprocess.run([*_GIT, "-C", str(outer), "submodule", "add", "-q", str(source), folder], check=True)
    update = ["submodule", "update", "-q", "--init", "--recursive"]
    subprocess.run([*_GIT, "-C", str(outer), *update], check=True)
    subprocess.run([*_GIT, "-C", str(outer), "submodule", "deinit", "-q", "-f", "unused"], check=True)
    write_tree(outer / "libs" / "inner", {"build/out.py": "1\n", "new.py": "1\n"})
    _repo(outer / "clone", {"c.py": "1\n"})  # a clone inside, not a submodule: its own collection
    expected = ["libs/inner/new.py", "libs/inner/src/a.py", "libs/inner/sub/d.py", "o.py"]
    assert _scan(outer) == expected
    assert _scan(outer / "libs") == [p.removeprefix("libs/") for p in expected[:-1]]


def test_the_kept_submodule_list_follows_the_index(tmp_path: Path) -> None:
    """`is_submodule` keeps the index's gitlinks between calls (a search inside a submodule asks it
    every time): adding, removing or deinitialising a submodule is seen at once all the same."""
    source = _repo(tmp_path / "source", {"s.py": "1\n"})
    outer = _repo(tmp_path / "outer", {"o.py": "1\n"})
    first, second = outer / "libs" / "first", outer / "libs" / "second"
    subprocess.run([*_GIT, "-C", str(outer), "submodule", "add", "-q", str(source), "libs/first"], check=True)
    assert is_submodule(first) and is_submodule(first)  # the second answer is the kept one
    _repo(second, {"x.py": "1\n"})  # a clone of its own: not a submodule yet
    assert not is_submodule(second)
    subprocess.run([*_GIT, "-C", str(outer), "add", "libs/second"], check=True)  # now a gitlink
    assert is_submodule(second) and is_submodule(first)
    subprocess.run([*_GIT, "-C", str(outer), "rm", "-q", "--cached", "libs/first"], check=True)
    assert not is_submodule(first) and is_submodule(second)
    assert submodule_folders(outer) == {"libs/second"}
    subprocess.run([*_GIT, "-C", str(outer), "submodule", "add", "-q", str(source), "libs/third"], check=True)
    assert submodule_folders(outer) == {"libs/second", "libs/third"}
    subprocess.run([*_GIT, "-C", str(outer), "submodule", "deinit", "-q", "-f", "libs/third"], check=True)
    assert submodule_folders(outer) == {"libs/second"}  # its folder is empty now


def test_a_deeper_gitignore_negation_wins_in_a_walk_as_in_git(tmp_path: Path) -> None:
    """git asks a path's .gitignore files deepest first: `!gen_kept.py` in a/ keeps a file the
    root's `gen_*.py` matches. The walk dropped it (any file matching was enough)."""
    files = {
        ".gitignore": "gen_*.py\n",
        "a/.gitignore": "!gen_kept.py\n",
        "a/gen_kept.py": "1\n",
        "a/gen_other.py": "1\n",
        "b.py": "1\n",
    }
    walked = write_tree(tmp_path / "walked", files)
    listed = _repo(tmp_path / "listed", files)
    assert sorted(_scan(walked)) == _scan(listed) == ["a/gen_kept.py", "b.py"]
