"""The command line as a user runs it: real subprocesses, one-line errors, no tracebacks."""

import fcntl
import hashlib
import json
import os
import pty
import re
import select
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import BOX_PY, SAMPLE_GO, SAMPLE_MD, SAMPLE_PY, run_cli, write_tree


def _one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = write_tree(
        tmp_path / "myproj", {"client.py": SAMPLE_PY, "pool/conn.go": SAMPLE_GO, "README.md": SAMPLE_MD}
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_add_update_search_json(home: Path, project: Path) -> None:
    added = run_cli("collection", "add", str(project), env_home=home, check=True)
    assert "repo-myproj" in added.stdout
    update = run_cli("update", "--json", env_home=home, check=True)
    assert json.loads(update.stdout)[0]["files"] == 3
    out = run_cli("search", "TCPConnector", "--json", env_home=home, check=True)
    hits = json.loads(out.stdout)
    assert hits[0]["path"] == "pool/conn.go"
    assert set(hits[0]) >= {"path", "line", "end_line", "score", "snippet", "collection"}
    assert 0 <= hits[0]["score"] <= 1 and hits[0]["collection"] == "repo-myproj"
    listed = json.loads(run_cli("collection", "list", "--json", env_home=home, check=True).stdout)
    assert listed[0]["files"] == 3
    run_cli("collection", "remove", "repo-myproj", env_home=home, check=True)
    assert json.loads(run_cli("collection", "list", "--json", env_home=home, check=True).stdout) == []


def test_search_and_context_read_a_query_of_dash_from_stdin(home: Path, project: Path) -> None:
    run_cli("collection", "add", str(project), env_home=home, check=True)
    report = "`$pool` leaks: 'TCPConnector' keeps \"keep-alive\" connections past its limit\n"
    hits = json.loads(run_cli("search", "-", "--json", env_home=home, check=True, stdin=report).stdout)
    assert hits[0]["path"] == "pool/conn.go"
    assert json.loads(run_cli("search", report, "--json", env_home=home, check=True).stdout) == hits
    context = run_cli("context", "-", env_home=home, check=True, stdin=report).stdout
    assert "pool/conn.go" in context
    empty = run_cli("search", "-", env_home=home, stdin="\n")
    assert empty.returncode == 2 and "Error: empty query" in empty.stderr and "Traceback" not in empty.stderr


def test_search_and_context_from_inside_a_repository_cover_it_and_the_default_collections(
    home: Path, project: Path, tmp_path: Path
) -> None:
    other = write_tree(tmp_path / "other", {"pool.go": SAMPLE_GO.replace("TCPConnector", "OtherConnector")})
    shared = write_tree(tmp_path / "notes", {"pooling.md": "# Pooling\n\nConnection pooling notes.\n"})
    for folder, extra in ((project, []), (other, []), (shared, ["--default"])):
        run_cli("collection", "add", str(folder), *extra, env_home=home, check=True)

    def collections(*args: str, cwd: Path) -> set[str]:
        out = run_cli("search", "connection pool", "--json", *args, env_home=home, check=True, cwd=cwd)
        return {hit["collection"] for hit in json.loads(out.stdout)}

    # inside a repository: it and the collections included by default, never the other repositories
    assert collections(cwd=project / "pool") == {"repo-myproj", "notes"}
    assert collections("-c", "other", cwd=project) == {"other"}
    assert collections(cwd=tmp_path) == {"notes"}  # outside every collection: the default ones
    context = run_cli("context", "connection pool", env_home=home, check=True, cwd=project).stdout
    assert "repo-myproj" in context and "| other |" not in context


def test_json_is_utf8_where_the_locale_is_not(home: Path, tmp_path: Path) -> None:
    """Windows gives piped stdout its ANSI code page; PYTHONIOENCODING=cp1252 makes the same
    stream here. A snippet cp1252 cannot hold comes out whole, as UTF-8 (it used to end the
    command with a UnicodeEncodeError traceback)."""
    root = write_tree(tmp_path / "boxes", {"box.py": BOX_PY})
    run_cli("collection", "add", str(root), env_home=home, check=True)
    out = run_cli("search", "draw a box", "--json", env_home=home, check=True, PYTHONIOENCODING="cp1252")
    snippet = json.loads(out.stdout)[0]["snippet"]
    assert "\u250c\u2500\u2510" in snippet and "\u4e2d\u6587" in snippet


def test_status_says_when_a_collection_was_indexed_by_another_version(home: Path, project: Path) -> None:
    run_cli("collection", "add", str(project), env_home=home, check=True)
    status = run_cli("status", env_home=home, check=True).stdout
    assert "repo-myproj: 3 files" in status and "another version" not in status
    index = sqlite3.connect(home / "cache" / "index.sqlite")
    with index:
        index.execute("UPDATE collections SET index_format = 'an older chunker'")
    index.close()
    assert "indexed by another version" in run_cli("status", env_home=home, check=True).stdout
    (row,) = json.loads(run_cli("status", "--json", env_home=home, check=True).stdout)["collections"]
    assert row["index_current"] is False
    run_cli("update", env_home=home, check=True)
    assert "another version" not in run_cli("status", env_home=home, check=True).stdout


def test_status_says_which_files_were_not_indexed_and_why(home: Path, project: Path) -> None:
    """The reasons used to be in `update --json` only: status showed the indexed count alone, and
    a daemon's refresh printed nothing, so a skipped file was invisible."""
    (project / "huge.py").write_text("x = 1\n" * 300_000)  # 1.8 MB, over QMD_MAX_FILE_BYTES
    (project / "blob.c").write_bytes(b"\x00\x01ELF\x00" * 64)
    run_cli("collection", "add", str(project), env_home=home, check=True)
    status = run_cli("status", env_home=home, check=True).stdout
    assert "repo-myproj: 3 files" in status
    assert "not indexed: 2 files (1 binary, 1 too_large)" in status
    (row,) = json.loads(run_cli("status", "--json", env_home=home, check=True).stdout)["collections"]
    assert row["skipped"] == {"binary": 1, "too_large": 1}
    (project / "huge.py").unlink()
    run_cli("update", env_home=home, check=True)
    assert "not indexed: 1 file (1 binary)" in run_cli("status", env_home=home, check=True).stdout
    run_cli("collection", "remove", "repo-myproj", env_home=home, check=True)
    (project / "blob.c").unlink()
    run_cli("collection", "add", str(project), env_home=home, check=True)
    assert "not indexed" not in run_cli("status", env_home=home, check=True).stdout


def test_same_folder_name_gets_distinct_stable_names(home: Path, tmp_path: Path) -> None:
    names = []
    for parent in ("a", "b"):
        root = write_tree(tmp_path / parent / "app", {"x.py": "x = 1\n"})
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        names.append(run_cli("collection", "add", str(root), "--no-update", env_home=home, check=True).stdout)
    again = run_cli(
        "collection", "add", str(tmp_path / "b" / "app"), "--no-update", env_home=home, check=True
    )
    assert "repo-app ->" in names[0]
    # named by the folder that tells them apart (it was a hash of the path: `repo-app-1f3a9c`)
    assert "repo-app-b ->" in names[1] and names[1].split()[1] == again.stdout.split()[1]
    third = write_tree(tmp_path / "c" / "b" / "app", {"x.py": "x = 1\n"})
    subprocess.run(["git", "init", "-q", str(third)], check=True)
    added = run_cli("collection", "add", str(third), "--no-update", env_home=home, check=True)
    name = added.stdout.split()[1]
    assert re.fullmatch("repo-app-[0-9a-f]{6}", name)  # `repo-app-b` is taken: a hash of its path


def _added_name(home: Path, root: Path) -> str:
    out = run_cli("collection", "add", str(root), "--no-update", env_home=home, check=True).stdout
    return out.split()[1]  # `collection NAME -> PATH`


def test_folder_names_keep_their_letters_in_any_script(home: Path, tmp_path: Path) -> None:
    # `café` was registered as repo-caf, `日本` and `+++` both as repo-root
    names = {}
    for folder in ("café", "日本", "+++", "Café"):
        root = write_tree(tmp_path / folder, {"x.py": f"def marker_{len(names)}():\n    return 1\n"})
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        names[folder] = _added_name(home, root)
    assert names["café"] == "repo-café" and names["日本"] == "repo-日本"
    assert names["+++"].startswith("repo-folder-") and names["Café"].startswith("repo-café-")
    assert len(set(names.values())) == 4
    run_cli("update", env_home=home, check=True)
    found = run_cli("search", "marker_1", "-c", "repo-日本", "--json", env_home=home, check=True)
    hits = json.loads(found.stdout)
    assert [(h["path"], h["collection"]) for h in hits] == [("x.py", "repo-日本")]


def test_a_moved_folder_takes_back_the_name_an_earlier_version_gave_it(home: Path, tmp_path: Path) -> None:
    """Names already given stay: `repo-caf` (what versions before kept of `café`) follows its folder
    when it moves, as a name given today does."""
    root = write_tree(tmp_path / "a" / "café", {"x.py": "x = 1\n", "y.py": "y = 2\n"})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    run_cli("collection", "add", str(root), "--name", "repo-caf", env_home=home, check=True)
    root.rename(tmp_path / "café")
    assert _added_name(home, tmp_path / "café") == "repo-caf"


def test_a_folder_name_past_the_name_limit_is_cut_and_kept_unique(home: Path, tmp_path: Path) -> None:
    # a repository in a folder of 120 letters was refused: its name `repo-aaa...` had 125
    names = []
    folders = (("a", "x" * 120), ("b", "x" * 120), ("c", "x" * 119 + "y"), ("d", "x" * 95), ("e", "x" * 95))
    for parent, folder in folders:
        root = write_tree(tmp_path / parent / folder, {"x.py": "def f():\n    return 1\n"})
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        names.append(_added_name(home, root))
    assert all(len(name) <= 100 and name.startswith("repo-xxx") for name in names)
    assert len(set(names)) == 5
    tag = hashlib.sha256(("repo-" + "x" * 120).encode()).hexdigest()[:6]
    assert names[0] == "repo-" + "x" * 88 + "-" + tag
    assert names[3] == "repo-" + "x" * 95  # within the limit: as before; the second one's is cut for its tag
    run_cli("collection", "remove", names[0], env_home=home, check=True)
    assert _added_name(home, tmp_path / "a" / ("x" * 120)) == names[0]  # deterministic


def test_missing_path(home: Path, tmp_path: Path) -> None:
    assert "does not exist" in _one_line_error(
        run_cli("collection", "add", str(tmp_path / "nope"), env_home=home)
    )


def test_a_symlink_loop_is_called_one(home: Path, tmp_path: Path) -> None:
    # `ln -s b a; ln -s a b` was reported as "does not exist", which sends the user looking for a
    # folder that is right there
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for path in (tmp_path / "a", tmp_path / "a" / "sub"):
        line = _one_line_error(run_cli("collection", "add", str(path), env_home=home))
        assert line == (
            f"qmd-daemon: error: path {path} is a symlink loop (its links lead back to one another), "
            "not a folder"
        )
    assert not (home / "config" / "index.yml").exists()


def test_path_is_a_file(home: Path, tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("x = 1\n")
    assert "is a file" in _one_line_error(run_cli("collection", "add", str(tmp_path / "f.py"), env_home=home))


def test_unknown_collection(home: Path) -> None:
    assert "no collection named" in _one_line_error(run_cli("search", "x", "-c", "ghost", env_home=home))


def test_unparsable_index_yml_is_left_untouched(home: Path, project: Path) -> None:
    config = home / "config" / "index.yml"
    config.parent.mkdir(parents=True)
    config.write_text("collections: {broken\n")
    assert "cannot parse" in _one_line_error(run_cli("collection", "add", str(project), env_home=home))
    assert config.read_text() == "collections: {broken\n"


def test_corrupt_database(home: Path, project: Path) -> None:
    run_cli("collection", "add", str(project), env_home=home, check=True)
    index = home / "cache" / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(str(index) + suffix).unlink(missing_ok=True)
    index.write_bytes(b"\x00garbage" * 4096)
    assert "not a usable SQLite database" in _one_line_error(run_cli("search", "x", env_home=home))
    assert index.read_bytes().startswith(b"\x00garbage")


def test_missing_root_on_update(home: Path, project: Path, tmp_path: Path) -> None:
    run_cli("collection", "add", str(project), env_home=home, check=True)
    project.rename(tmp_path / "moved")
    assert "does not exist" in _one_line_error(run_cli("update", env_home=home))
    # the previous index stays searchable by name (its hits name files that are gone: never by default)
    found = run_cli("search", "TCPConnector", "-c", "repo-myproj", "--json", env_home=home, check=True)
    assert json.loads(found.stdout)
    unnamed = run_cli("search", "TCPConnector", env_home=home)
    assert "the folder of every one is gone" in _one_line_error(unnamed)


def test_a_root_turned_link_loop_is_called_one_on_update(home: Path, project: Path, tmp_path: Path) -> None:
    # a registered root replaced by a link loop was "does not exist (moved or deleted?)": it is there
    run_cli("collection", "add", str(project), env_home=home, check=True)
    project.rename(tmp_path / "moved")
    project.symlink_to(tmp_path / "loop")
    (tmp_path / "loop").symlink_to(project)
    line = _one_line_error(run_cli("update", env_home=home))
    assert f"path {project} is a symlink loop (its links lead back to one another), not a folder;" in line


def test_update_goes_on_past_a_moved_repository(home: Path, project: Path, tmp_path: Path) -> None:
    """A repository moved or deleted on disk stopped `update` for every collection after it: the
    others stayed stale until the user found and removed the gone one."""
    other = write_tree(tmp_path / "other", {"a.py": "x = 1\n"})
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    for root in (project, other):
        run_cli("collection", "add", str(root), env_home=home, check=True)
    project.rename(tmp_path / "moved")
    (other / "fresh.py").write_text("def quokka_marmalade():\n    return 1\n")
    proc = run_cli("update", env_home=home)
    assert "repo-myproj" in _one_line_error(proc) and "collection remove repo-myproj" in proc.stderr
    assert "repo-other: 2 files (1 added" in proc.stdout
    hits = json.loads(run_cli("search", "quokka_marmalade", "--json", env_home=home, check=True).stdout)
    assert hits and hits[0]["path"] == "fresh.py"
    # the gone folder's files are not offered as hits: they are not there to open
    hits = json.loads(run_cli("search", "TCPConnector", "--json", env_home=home, check=True).stdout)
    assert not [hit for hit in hits if hit["collection"] == "repo-myproj"]
    reports = json.loads(run_cli("update", "--json", env_home=home).stdout)
    assert [r["collection"] for r in reports if r["error"]] == ["repo-myproj"]
    status = run_cli("status", env_home=home, check=True).stdout
    assert "its folder is gone (moved or deleted?): `qmd-daemon collection remove repo-myproj`" in status
    assert status.count("folder is gone") == 1


def test_no_match_prints_empty_list(home: Path, project: Path) -> None:
    run_cli("collection", "add", str(project), env_home=home, check=True)
    assert json.loads(run_cli("search", "zzzqqqxxx", "--json", env_home=home, check=True).stdout) == []


def _big_tree(root: Path, version: str, files: int) -> None:
    body = "\n".join(
        f"def function_{i}_{version}(arg):\n    return arg * {i}  # marker_{version}\n" for i in range(30)
    )
    for n in range(files):
        target = root / f"pkg{n % 20}" / f"mod{n}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f'"""module {n}"""\n' + body)


def _wait_for_files_written(proc: subprocess.Popen[bytes], terminal: int, *, total: int) -> int:
    """Read the update's progress bar (tqdm, drawn only on a terminal, inside the write
    transaction) until it counts some files written but not all: the kill then lands mid-
    transaction by that event, not by a guess at how long the update takes. 60 s is a ceiling."""
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([terminal], [], [], 1.0)
        if not ready:
            assert proc.poll() is None, f"update exited ({proc.returncode}) before it showed progress"
            continue
        try:
            seen += os.read(terminal, 4096)
        except OSError:  # the terminal's other end closed: the update exited
            break
        done = [int(n) for n, of in re.findall(rb"(\d+)/(\d+)", seen) if int(of) == total]
        if any(0 < n < total for n in done):
            return max(done)
    raise AssertionError(f"no progress between 0 and {total} files seen: {seen[-300:]!r}")


def test_kill_minus_9_mid_update_leaves_previous_index_searchable(home: Path, tmp_path: Path) -> None:
    root = tmp_path / "big"
    _big_tree(root, "old", 1500)
    run_cli("collection", "add", str(root), "--name", "big", "--no-update", env_home=home, check=True)
    run_cli("update", env_home=home, check=True)
    _big_tree(root, "new", 1500)
    env = dict(os.environ, QMD_DAEMON_HOME=str(home))
    terminal, child_end = pty.openpty()  # stderr a terminal: the CLI draws its progress bar ...
    fcntl.ioctl(child_end, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # ... if it has columns
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from qmd_daemon.cli import main; main()", "update"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=child_end,
        )
        os.close(child_end)
        written = _wait_for_files_written(proc, terminal, total=1500)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        os.close(terminal)
    assert proc.returncode == -signal.SIGKILL, f"update ended by itself after {written} files"
    old = json.loads(run_cli("search", "marker_old", "--json", env_home=home, check=True).stdout)
    assert old, "the previous index must stay searchable after kill -9"
    assert json.loads(run_cli("search", "marker_new", "--json", env_home=home, check=True).stdout) == []
    run_cli("update", env_home=home, check=True)
    assert json.loads(run_cli("search", "marker_new", "--json", env_home=home, check=True).stdout)


def test_refuses_to_index_the_filesystem_root(home: Path) -> None:
    assert "refusing to index" in _one_line_error(run_cli("collection", "add", "/", env_home=home))


def test_bad_ignore_pattern_is_refused_before_anything_is_saved(home: Path, project: Path) -> None:
    assert "invalid ignore pattern" in _one_line_error(
        run_cli("collection", "add", str(project), "--ignore", "!", env_home=home)
    )
    assert not (home / "config" / "index.yml").exists()


@pytest.mark.parametrize(
    ("mask", "why"),
    [
        ("[", "a '[' that no ']' closes"),  # was registered, then 0 files indexed
        ("**/*.{py,md", "a '{' or '}' without its pair"),
        ("!*.py", "no glob in it selects files"),
    ],
)
def test_a_mask_that_is_no_valid_glob_is_refused_before_anything_is_saved(
    home: Path, project: Path, mask: str, why: str
) -> None:
    line = _one_line_error(run_cli("collection", "add", str(project), "--mask", mask, env_home=home))
    assert line.startswith(f"qmd-daemon: error: invalid mask {mask!r}: {why}"), line
    assert not (home / "config" / "index.yml").exists()


def test_home_that_is_a_file_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    assert _one_line_error(run_cli("collection", "list", env_home=tmp_path / "file"))


def test_embed_without_a_model_fails_in_json_mode_too(home: Path, project: Path) -> None:
    run_cli("collection", "add", str(project), env_home=home, check=True)
    assert "cannot embed" in _one_line_error(run_cli("embed", "--json", env_home=home))


def test_concurrent_collection_adds_all_land(home: Path, tmp_path: Path) -> None:
    roots = [write_tree(tmp_path / f"r{i}", {"x.py": "x = 1\n"}) for i in range(6)]
    env = dict(os.environ, QMD_DAEMON_HOME=str(home))
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from qmd_daemon.cli import main; main()",
                "collection",
                "add",
                str(root),
                "--no-update",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for root in roots
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    listed = json.loads(run_cli("collection", "list", "--json", env_home=home, check=True).stdout)
    assert sorted(row["name"] for row in listed) == [f"r{i}" for i in range(6)]


# Put first on sys.meta_path, this finder answers for the POSIX-only modules as Windows' Python
# does: there is no such module. (filelock, which holds our locks, falls back to its soft lock
# here; on Windows it uses msvcrt.)
WINDOWS_LIKE = """
import importlib.abc, sys
POSIX_ONLY = {"fcntl", "termios", "pwd", "grp", "resource"}
class WindowsLike(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in POSIX_ONLY:
            raise ImportError(f"No module named {name!r}", name=name)
        return None
for name in POSIX_ONLY:
    sys.modules.pop(name, None)
sys.meta_path.insert(0, WindowsLike())
"""

IMPORT_ALL = """
import importlib, pkgutil, clients, qmd_daemon
LINUX_ONLY = {"qmd_daemon.daemon.inotify_backend"}  # inotify_simple: imported on Linux only
failed = []
for package in (clients, qmd_daemon):
    inside = [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    for name in [package.__name__, *inside]:
        if name.endswith(".__main__") or name in LINUX_ONLY:  # entry points run their command
            continue
        try:
            importlib.import_module(name)
        except ImportError as exc:
            failed.append(f"{name}: {exc}")
print("\\n".join(failed) or "all imported")
"""


def test_everything_imports_and_runs_without_posix_only_modules(home: Path, project: Path) -> None:
    # issue 12 item 8: config.py and vectorize.py imported fcntl at module level; every command
    # failed on Windows
    def run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-W", "ignore::UserWarning", "-c", WINDOWS_LIKE + code, *args],
            capture_output=True,
            text=True,
            env=dict(os.environ, QMD_DAEMON_HOME=str(home), HOME=str(home.parent)),
            timeout=180,
        )

    imported = run(IMPORT_ALL)
    assert imported.stdout.strip() == "all imported", imported.stdout + imported.stderr
    cli = "from qmd_daemon.cli import main; main()"
    assert "collection" in run(cli, "--help").stdout
    for args in (("collection", "add", str(project)), ("update",)):
        step = run(cli, *args)
        assert step.returncode == 0, step.stderr
    found = run(cli, "search", "TCPConnector", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["path"] == "pool/conn.go"


def test_stop_shuts_a_real_daemon_down_and_says_when_none_runs(home: Path) -> None:
    from tests.daemon.support import pid_running, start_serve, state_of, wait_for

    idle = run_cli("stop", env_home=home)
    assert idle.returncode == 0 and idle.stdout.strip() == "no daemon running"
    daemon = start_serve(home)
    try:
        state = wait_for(lambda: state_of(home), timeout=60)
        stopped = run_cli("stop", env_home=home, check=True)
        assert stopped.stdout.strip() == f"stopped the daemon (pid {state['pid']})"
        assert daemon.wait(timeout=10) == 0  # it had exited (or was exiting) when stop returned
        assert not pid_running(state["pid"]) and state_of(home) is None
        assert run_cli("stop", env_home=home, check=True).stdout.strip() == "no daemon running"
    finally:
        if daemon.poll() is None:  # only the daemon this test started
            daemon.kill()
            daemon.wait()


def test_status_counts_the_rerank_scores_searches_stored(
    home: Path, tmp_path: Path, small_models: dict[str, Path]
) -> None:
    """`status` in a fresh process says the reranker is not loaded; it also says how many rerank
    scores are stored, and that number is what real reranked searches wrote and later reused."""
    from qmd_daemon.config import IndexConfig
    from tests.conftest import MODELS_DIR

    root = write_tree(tmp_path / "p", {"client.py": SAMPLE_PY, "conn.go": SAMPLE_GO})
    config = IndexConfig.load(home / "config" / "index.yml")
    config.set_models({"profile": "small", "expand": "off"})
    config.save()
    env = {"QMD_MODELS_DIR": str(MODELS_DIR)}
    name = run_cli("collection", "add", str(root), env_home=home, check=True, **env).stdout.split()[1]

    def entries() -> int:
        status = json.loads(run_cli("status", "--json", env_home=home, check=True, **env).stdout)
        return status["llm_cache"]["entries"]

    assert entries() == 0
    search = ("search", "cookie header session connection", "-c", name, "--rerank", "--budget-ms", "0",
              "--no-vectors", "--explain", "--json")
    first = run_cli(*search, env_home=home, check=True, **env)
    reranked = json.loads(first.stderr.split("pipeline: ", 1)[1].splitlines()[0])["reranked"]
    assert reranked >= 2 and entries() == reranked
    run_cli(*search, env_home=home, check=True, **env)  # the same pairs: answered from the cache
    assert entries() == reranked
    assert "llm cache: " + str(reranked) in run_cli("status", env_home=home, check=True, **env).stdout


def test_text_output_says_when_the_best_hit_is_weak(home: Path, project: Path) -> None:
    run_cli("collection", "add", str(project), env_home=home, check=True)
    weak = run_cli("search", "sourdough bread starter with cookie", env_home=home, check=True).stdout
    assert weak.splitlines()[0].startswith("no strong match: the best score is under 0.25")
    strong = run_cli("search", "parse cookie header", env_home=home, check=True).stdout
    assert "no strong match" not in strong and "client.py" in strong.splitlines()[0]


def test_status_says_whether_the_daemon_runs(daemon_home: Path, tmp_path: Path) -> None:
    # after a first `ai-search`, `qmd-daemon status` said nothing of the daemon it had started
    # (and showed this process's models as "not loaded yet") (first-hour-9)
    from tests.daemon.support import make_repo, run_client, state_of

    def status() -> tuple[str, dict[str, object]]:
        text = run_cli("status", env_home=daemon_home, check=True).stdout
        data = json.loads(run_cli("status", "--json", env_home=daemon_home, check=True).stdout)
        return text, data["daemon"]

    text, data = status()
    assert "daemon: not running" in text
    assert data == {"running": False, "pid": None, "embed_retry": None, "crash_backoff": None}
    repo = make_repo(tmp_path / "proj")
    assert run_client("ai_search.py", "cookie", home=daemon_home, cwd=repo).returncode == 0
    state = state_of(daemon_home)
    text, data = status()
    assert f"daemon: running (pid {state['pid']}, port {state['port']})" in text
    assert data == {"running": True, "pid": state["pid"], "embed_retry": None, "crash_backoff": None}
    assert run_cli("stop", env_home=daemon_home, check=True).returncode == 0
    text, data = status()
    assert "daemon: not running" in text and not data["running"]  # its state file is no daemon


def test_status_says_that_no_daemon_is_started_after_daemons_crashed_in_a_row(daemon_home: Path) -> None:
    """The clients' crash back-off (clients/_qmd_client.py backing_off): `status` said "not running
    (ai-search ... starts one)" while none would be started."""
    from clients import _qmd_client as qc

    at = time.time() - 60
    record = daemon_home / "state" / qc.CRASH_FILE
    record.parent.mkdir(parents=True)
    crash = {"at": at, "pid": 4242, "reason": "Fatal Python error: Segmentation fault", "crashes": 3}
    record.write_text(json.dumps(crash))
    text = run_cli("status", env_home=daemon_home, check=True).stdout
    data = json.loads(run_cli("status", "--json", env_home=daemon_home, check=True).stdout)["daemon"]
    until = time.strftime("%H:%M:%S", time.localtime(at + qc.CRASH_BACKOFF_S))
    line = next(line for line in text.splitlines() if line.startswith("daemon: "))
    assert line.startswith(
        f"daemon: not running: the daemon crashed 3 times in a row, last at "
        f"{time.strftime('%H:%M:%S', time.localtime(at))} (Fatal Python error: Segmentation fault): "
        f"searches run in-process until {until} instead of starting one; "
    ) and line.endswith(f"`rm {record}` lets the next search start one"), line
    assert data["crash_backoff"] == dict(crash, until=at + qc.CRASH_BACKOFF_S)
    record.write_text(json.dumps(dict(crash, at=at - qc.CRASH_BACKOFF_S)))
    text = run_cli("status", env_home=daemon_home, check=True).stdout
    assert "daemon: not running (ai-search, qmd-warm or the SessionStart hook starts one)" in text  # over


def test_search_and_context_on_an_index_with_no_collection_say_how_to_add_one(home: Path) -> None:
    # a fresh HOME: `qmd-daemon search` printed "no results" with exit 0, as if it had searched
    for command in ("search", "context"):
        proc = run_cli(command, "how are flags parsed", env_home=home)
        assert proc.returncode == 1 and proc.stdout == "", proc.stdout
        assert _one_line_error(proc) == (
            "qmd-daemon: error: no collections to search: add one with `qmd-daemon collection add PATH` "
            "(ai-search registers the git repository it runs in by itself)"
        )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["search", "x", "--min-score", "nan"], "'--min-score': 'nan' is not a number."),
        (["search", "x", "--budget-ms", "NaN"], "'--budget-ms': 'NaN' is not a number."),
        (["stop", "--timeout", "nan"], "'--timeout': 'nan' is not a number."),
        (["serve", "--idle-minutes", "nan"], "'--idle-minutes': 'nan' is not a number."),
        (["serve", "--idle-minutes", "0"], "'--idle-minutes': 0.0 is not in the range x>0."),
    ],
)
def test_numbers_no_bound_can_check_are_refused(home: Path, args: list[str], said: str) -> None:
    # 'nan' passed click's FloatRange (every comparison with it is false): `--min-score nan` kept
    # every hit, and `serve --idle-minutes nan` (or 0, or -1) started a daemon that stopped at once
    proc = run_cli(*args, env_home=home)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines()[-1] == f"Error: Invalid value for {said}"
    assert not (home / "state" / "daemon.json").exists()


def test_python_dash_m_runs_the_command_line(home: Path) -> None:
    # `python -m qmd_daemon.cli status` (the way to run a checkout's code) printed nothing, exit 0
    proc = subprocess.run([sys.executable, "-m", "qmd_daemon.cli", "--version"], capture_output=True,
                          text=True, env=dict(os.environ, QMD_DAEMON_HOME=str(home)), timeout=60)  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.startswith("qmd-daemon, version ")


def test_a_notebook_hits_text_numbers_only_its_first_line(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A notebook's snippet shows its cells' lines with the JSON between them left out
    (search/snippets.py), so its lines after the first are not the file's line + offset: the
    text tables (search, ai-search on a terminal) number its first line only."""
    from clients.ai_search import _table
    from tests.ingest.test_notebook import code, nbformat4

    text = nbformat4([code(f"step_{n} = fit_stage({n})", f"plot_stage(step_{n})") for n in range(4)])
    root = write_tree(tmp_path / "nb", {"stages.ipynb": text, "util.py": "def fit_stage(n):\n    return n\n"})
    run_cli("collection", "add", str(root), env_home=home, check=True)
    question = "step_0 fit_stage plot_stage"
    hits = json.loads(run_cli("search", question, "--json", env_home=home, check=True).stdout)
    notebook = next(h for h in hits if h["path"] == "stages.ipynb")
    first = next(n for n, line in enumerate(text.split("\n"), 1) if "step_0 = fit_stage(0)" in line)
    assert notebook["line"] == first and notebook["snippet"].startswith("step_0 = fit_stage(0)")
    out = run_cli("search", question, env_home=home, check=True).stdout
    _table([notebook])
    for table in (out, capsys.readouterr().out):
        rows = table[table.index("stages.ipynb"):].splitlines()[1:4]
        assert rows[0].split("|")[0].strip() == str(first)
        assert rows[1] == "            | plot_stage(step_0)", rows
    assert re.search(r"^\s+2 \| {5}return n$", out[out.index("util.py"):], re.M)  # other files: every line


def test_status_names_pull_first_when_no_embedding_model_is_there(tmp_path: Path) -> None:
    # it said `none yet (run qmd-daemon embed)`, and `embed` then said only that the model is
    # missing: the first hour of a machine without the models went round that loop
    repo = write_tree(tmp_path / "repo", {"a.py": "def kept_function():\n    return 1\n"})
    home = tmp_path / "home"
    run_cli("collection", "add", str(repo), env_home=home, check=True, HF_HUB_OFFLINE="1")
    status = run_cli("status", env_home=home, check=True, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    assert "embed: unavailable" in status.stdout
    assert "deep vectors: none yet (no embedding model: run `qmd-daemon pull`, then `qmd-daemon embed`)" in (
        status.stdout.splitlines()
    )


def test_a_second_name_for_a_registered_folder_says_so(tmp_path: Path) -> None:
    # `collection add . --name other` in a registered repository indexed it again without a word,
    # and a search outside every repository then returned each hit twice
    repo = write_tree(tmp_path / "repo", {"a.py": "def kept_function():\n    return 1\n"})
    home = tmp_path / "home"
    first = run_cli("collection", "add", str(repo), env_home=home, check=True)
    assert first.stderr == ""
    again = run_cli("collection", "add", str(repo), env_home=home, check=True)  # the same: no note
    assert again.stderr == ""
    other = run_cli("collection", "add", str(repo), "--name", "other", env_home=home, check=True)
    assert other.stderr == (
        f"note: {repo.resolve()} is also collection repo: it is indexed once for each "
        "(`qmd-daemon collection remove other` undoes this add)\n"
    )


def test_a_pull_that_fails_leaves_the_stored_profile_as_it_was(home: Path, tmp_path: Path) -> None:
    """`pull --profile qwen3` offline stored qwen3 in index.yml before it failed: search and embed
    then wanted models that are not there ('cannot embed: ... not in the local cache'), and the
    working small profile was gone until the user put it back by hand."""
    from tests.conftest import MODELS_DIR

    index_yml = home / "config" / "index.yml"
    index_yml.parent.mkdir(parents=True, exist_ok=True)
    index_yml.write_text("models: {profile: small}\n")
    failed = run_cli("pull", "--profile", "qwen3", "--role", "embed", env_home=home, HF_HUB_OFFLINE="1",
                     HF_HOME=str(tmp_path / "hf"), QMD_MODELS_DIR=str(tmp_path / "models"))
    assert failed.returncode == 1 and "not in the local cache" in _one_line_error(failed)
    assert "profile: small" in index_yml.read_text()
    index_yml.write_text("models: {profile: qwen3}\n")  # a pull that succeeds stores its profile
    pulled = run_cli("pull", "--profile", "small", "--role", "embed", env_home=home, check=True,
                     HF_HUB_OFFLINE="1", QMD_MODELS_DIR=str(MODELS_DIR))
    assert "embed: " in pulled.stdout and "profile: small" in index_yml.read_text()


def test_status_lists_a_registered_collection_the_index_holds_nothing_of(home: Path, tmp_path: Path) -> None:
    """A collection added with --no-update (or being indexed by an add or a first search, or an
    add stopped by Ctrl-C) was missing from `status`, while `collection list` showed it: a user
    watching status during a long first index saw no sign of it."""
    root = write_tree(tmp_path / "proj", {"client.py": SAMPLE_PY})
    run_cli("collection", "add", str(root), "--name", "proj", "--no-update", env_home=home, check=True)
    text = run_cli("status", env_home=home, check=True).stdout
    assert "  proj: not indexed yet (an add or a search may be indexing it now; else " \
        "`qmd-daemon update -c proj`)" in text.splitlines(), text
    (row,) = json.loads(run_cli("status", "--json", env_home=home, check=True).stdout)["collections"]
    assert (row["name"], row["indexed"], row["files"], row["root"]) == ("proj", False, 0, str(root))
    run_cli("update", "-c", "proj", env_home=home, check=True)
    (row,) = json.loads(run_cli("status", "--json", env_home=home, check=True).stdout)["collections"]
    assert row["indexed"] and row["files"] == 1
    assert "  proj: 1 files" in run_cli("status", env_home=home, check=True).stdout


# `qmd-daemon embed` whose process gets a real SIGINT (what Ctrl-C sends) right after its first
# batch of deep vectors is committed: at a known point, not at a moment a test has to guess
EMBED_CTRL_C = """
import os, signal
# as from a terminal: a run started in the background of a non-interactive shell (nohup ... &)
# inherits SIGINT ignored, and Python then leaves it so
signal.signal(signal.SIGINT, signal.default_int_handler)
from qmd_daemon.store.vectors import VectorIndex
put = VectorIndex.put
def put_then_ctrl_c(self, rows):
    written = put(self, rows)
    os.kill(os.getpid(), signal.SIGINT)
    return written
VectorIndex.put = put_then_ctrl_c
from qmd_daemon.cli import main
main()
"""


def test_embed_stopped_by_ctrl_c_says_its_vectors_are_kept_and_the_next_run_goes_on(
    home: Path, tmp_path: Path
) -> None:
    """Ctrl-C in `embed` printed a bare 'aborted': nothing said the vectors written so far stay,
    or that running it again goes on from there (it does: they are committed batch by batch)."""
    from qmd_daemon.config import IndexConfig
    from tests.conftest import MODELS_DIR

    body = "def fn_{i}(x):\n    return x + {i}  # step {i}\n"
    root = write_tree(tmp_path / "proj", {f"m{i}.py": body.format(i=i) for i in range(40)})
    config = IndexConfig.load(home / "config" / "index.yml")
    config.set_models({"profile": "small"})
    config.save()
    env = {"QMD_MODELS_DIR": str(MODELS_DIR)}
    run_cli("collection", "add", str(root), "--name", "proj", env_home=home, check=True, **env)
    stopped = subprocess.run(
        [sys.executable, "-c", EMBED_CTRL_C, "embed"], env=dict(os.environ, QMD_DAEMON_HOME=str(home), **env),
        capture_output=True, text=True, timeout=300,
    )
    assert stopped.returncode == 130, stopped.stderr
    assert stopped.stderr.strip().splitlines()[-1] == (
        "interrupted: the vectors embedded so far are kept; `qmd-daemon embed` goes on from there"
    )
    vectors = json.loads(run_cli("status", "--json", env_home=home, check=True, **env).stdout)["vectors"]
    done, total = vectors["embedded"], vectors["chunks"]
    assert 0 < done < total, (done, total)  # the first batch, kept
    again = run_cli("embed", "--json", env_home=home, check=True, **env)
    assert json.loads(again.stdout)["embedded"] == total - done


def test_a_collection_edited_out_of_index_yml_can_be_deleted_with_purge(home: Path, tmp_path: Path) -> None:
    """On SQLite a collection whose index.yml entry went (edited out, the file restored from an
    older copy) showed in status as 'another index.yml's' for good: `collection remove` said 'no
    collection named ...', and nothing could delete its rows."""
    from qmd_daemon.config import IndexConfig

    root = write_tree(tmp_path / "proj", {"client.py": SAMPLE_PY})
    run_cli("collection", "add", str(root), "--name", "proj", env_home=home, check=True)
    config = IndexConfig.load(home / "config" / "index.yml")
    config.remove_collection("proj")
    config.save()
    shown = run_cli("status", env_home=home, check=True).stdout
    assert "`qmd-daemon collection remove --purge proj` deletes it" in shown, shown
    refused = run_cli("collection", "remove", "proj", env_home=home)
    assert refused.returncode == 2
    assert "`collection remove --purge proj` deletes it" in _one_line_error(refused)
    purged = run_cli("collection", "remove", "proj", "--purge", env_home=home, check=True)
    assert purged.stdout == "removed proj\n"
    assert json.loads(run_cli("status", "--json", env_home=home, check=True).stdout)["collections"] == []


def test_collection_list_says_a_folder_is_gone(home: Path, tmp_path: Path) -> None:
    """A collection whose folder was moved or deleted: status named it with the fix, while
    `collection list`, the command that lists collections, showed it as any other."""
    root = write_tree(tmp_path / "proj", {"client.py": SAMPLE_PY})
    run_cli("collection", "add", str(root), "--name", "proj", env_home=home, check=True)
    (row,) = json.loads(run_cli("collection", "list", "--json", env_home=home, check=True).stdout)
    assert row["folder_gone"] is False
    root.rename(tmp_path / "elsewhere")
    (row,) = json.loads(run_cli("collection", "list", "--json", env_home=home, check=True).stdout)
    assert row["folder_gone"] is True and row["files"] == 1
    listed = run_cli("collection", "list", env_home=home, check=True).stdout
    assert listed == f"proj  {root}  files=1 chunks=1  (folder gone: `qmd-daemon collection remove proj`)\n"


def test_a_folder_inside_or_around_another_collection_says_so(tmp_path: Path) -> None:
    # `collection add repo/sub` (or `add repo` after it) indexed the shared files once for each,
    # without a word, and a search of both returned each hit twice
    proj = write_tree(tmp_path / "proj", {"a.py": "A = 1\n", "sub/b.py": "B = 2\n", "inner/c.py": "C = 3\n"})
    subprocess.run(["git", "init", "-q", str(proj / "inner")], check=True)  # a repository of its own
    home = tmp_path / "home"
    assert run_cli("collection", "add", str(proj / "sub"), env_home=home, check=True).stderr == ""
    around = run_cli("collection", "add", str(proj), "--name", "proj", env_home=home, check=True)
    assert around.stderr == (
        f"note: {proj.resolve()} lies around collection sub ({(proj / 'sub').resolve()}): the files both "
        "select are indexed once for each (`qmd-daemon collection remove proj` undoes this add)\n"
    )
    assert "lies inside collection proj" in run_cli(
        "collection", "add", str(proj / "sub"), "--name", "sub2", env_home=home, check=True).stderr
    assert run_cli("collection", "add", str(proj / "inner"), env_home=home, check=True).stderr == ""
