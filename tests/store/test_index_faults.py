"""What a user is told when the index's disk fills up, the file is damaged or empty: the cause in
one line with its fix, and the index left as it was."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.settings import Settings
from qmd_daemon.store.connection import connect, quick_check
from qmd_daemon.store.index_store import IndexStore
from tests.conftest import python_as_another_user, run_cli, write_tree


def _big_repo(root: Path, files: int = 300) -> Path:
    body = "".join(f"def handler_{j}(request):\n    return request.value * {j}\n\n\n" for j in range(30))
    return write_tree(root, {f"pkg/mod_{i}.py": f"# module {i}\n" + body for i in range(files)})


def test_disk_full_is_reported_as_disk_full_and_the_index_is_kept(engine: Engine, tmp_path: Path) -> None:
    small = write_tree(tmp_path / "small", {"a.py": "def kept_function():\n    return 1\n"})
    engine.add_collection(small, name="small")
    engine.update(["small"], progress=False)
    engine.add_collection(_big_repo(tmp_path / "big"), name="big")
    pages = engine.store.conn.execute("PRAGMA page_count").fetchone()[0]
    # SQLITE_FULL without filling a real disk: the file may not grow past a few more pages
    engine.store.conn.execute(f"PRAGMA max_page_count = {pages + 4}")
    with pytest.raises(IndexDatabaseError) as caught:  # was "cannot rollback - no transaction is active"
        engine.update(["big"], progress=False)
    message = str(caught.value)
    assert message.startswith("disk full: the index ") and "MiB free on its disk" in message
    assert "\n" not in message
    assert not engine.store.conn.in_transaction
    assert [h.path for h in engine.search("kept_function", ["small"])] == ["a.py"]


@contextlib.contextmanager
def _tmpfs(size: str) -> Iterator[Path]:
    """A real small disk to fill or remount read-only; the test is skipped where mounting one is
    not allowed (not root): the max_page_count test above covers the full-disk logic there."""
    folder = Path(tempfile.mkdtemp(prefix="qmd-tmpfs-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, check=False
    )
    if done.returncode != 0:
        folder.rmdir()
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _one_file_indexed_on(disk: Path, tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A repository of one function indexed by the CLI into DISK: (index, its env, the home)."""
    repo = write_tree(tmp_path / "repo", {"a.py": "def kept_function():\n    return 1\n"})
    index = disk / "index.sqlite"
    env = {"QMD_INDEX_PATH": str(index)}
    home = tmp_path / "home"
    assert run_cli("collection", "add", str(repo), env_home=home, **env).returncode == 0
    return index, env, home


def test_cli_update_on_a_full_disk_says_so_in_one_line(tmp_path: Path) -> None:
    with _tmpfs("1m") as disk:
        repo = _big_repo(tmp_path / "repo", files=400)
        env = {"QMD_INDEX_PATH": str(disk / "index.sqlite")}
        home = tmp_path / "home"
        added = run_cli("collection", "add", str(repo), "--no-update", env_home=home, **env)
        assert added.returncode == 0, added.stderr
        done = run_cli("update", env_home=home, **env)
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("qmd-daemon: error: disk full: the index "), lines
        assert "no transaction is active" not in done.stderr
        status = run_cli("status", env_home=home, **env)
        assert status.returncode == 0, status.stderr  # still a readable index


def test_an_index_on_a_full_disk_is_not_called_damaged(tmp_path: Path) -> None:
    # SQLite cannot make the -shm file of an index on a full disk and says `disk I/O error`, which
    # read "not a usable SQLite database ... move it away and rebuild": every vector thrown away
    with _tmpfs("2m") as disk:
        index, env, home = _one_file_indexed_on(disk, tmp_path)
        kept = index.read_bytes()
        with open(disk / "filler", "wb") as filler, contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        for argv in (["status"], ["search", "kept_function"], ["update"]):
            done = run_cli(*argv, env_home=home, **env)
            assert done.returncode == 1 and done.stderr == (
                f"qmd-daemon: error: disk full: the index {index} cannot be opened (0.0 MiB free on "
                "its disk; SQLite needs room beside it for its -shm and -wal files); free some space "
                "and run it again (the index was not changed: it need not be rebuilt)\n"
            ), (argv, done.stderr)
        assert index.read_bytes() == kept
        (disk / "filler").unlink()
        found = run_cli("search", "kept_function", "--json", env_home=home, **env)
        assert found.returncode == 0 and '"a.py"' in found.stdout, found.stderr


def test_an_index_on_a_read_only_mount_is_named_as_such(tmp_path: Path) -> None:
    # os.access refuses writing there as for a file mode: the line said "permission denied ...
    # `chmod 600` it", which a read-only file system refuses too
    with _tmpfs("4m") as disk:
        index, env, home = _one_file_indexed_on(disk, tmp_path)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        done = run_cli("status", env_home=home, **env)
        assert done.returncode == 1 and done.stderr == (
            f"qmd-daemon: error: index {index} is on a read-only file system; it need not be "
            "rebuilt: mount it read-write, or set QMD_INDEX_PATH to a place this user can write\n"
        )


def _scribble(path: Path, start: float) -> None:
    """Overwrite the file from `start` (a fraction of its size) on: the pages there are garbage."""
    with open(path, "r+b") as handle:
        size = os.fstat(handle.fileno()).st_size
        offset = max(4096, int(size * start) // 4096 * 4096)
        handle.seek(offset)
        handle.write(b"\xa5" * (size - offset))


def _indexed(tmp_path: Path) -> Path:
    settings = Settings.from_env()
    engine = Engine(settings)
    engine.add_collection(_big_repo(tmp_path / "repo", files=20), name="repo")
    engine.update(["repo"], progress=False)
    engine.close()
    IndexStore(settings.index_path).close()  # checkpointed: every page is in the main file
    return settings.index_path


def test_a_damaged_index_is_found_by_the_check(home: Path, tmp_path: Path) -> None:
    path = _indexed(tmp_path)
    _scribble(path, 0.5)
    IndexStore(path).close()  # opening reads only the header, the schema and meta: no error yet
    fix = r"is damaged .*move it away and run `qmd-daemon update`"
    with pytest.raises(IndexDatabaseError, match=fix) as caught:
        quick_check(path)
    assert "\n" not in str(caught.value)


def test_a_damaged_schema_is_reported_with_its_fix_at_open(home: Path, tmp_path: Path) -> None:
    path = _indexed(tmp_path)
    _scribble(path, 0.0)
    with pytest.raises(IndexDatabaseError, match=r"move it away and run `qmd-daemon update`"):
        IndexStore(path)
    # the fix it names works: the collections live in index.yml, the update rebuilds the index
    path.rename(path.with_name("index.sqlite.damaged"))
    rebuilt = run_cli("update", env_home=path.parent.parent)
    assert rebuilt.returncode == 0, rebuilt.stderr
    found = run_cli("search", "handler_7", "--json", env_home=path.parent.parent)
    assert found.returncode == 0 and "pkg/mod_" in found.stdout, found.stderr


def test_an_empty_index_file_is_refused_not_taken_as_new(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    path.touch()
    with pytest.raises(IndexDatabaseError, match="is an empty file, not an index"):
        connect(path)
    assert path.stat().st_size == 0  # left as it was


def test_a_new_index_never_shows_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "index.sqlite"
    conn, _ = connect(path)
    conn.close()
    assert path.stat().st_size > 0 and oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []


def test_a_creation_in_progress_in_this_process_is_left_alone(tmp_path: Path) -> None:
    # review item E: the temporary name was `.NAME.new-PID`, opened with O_TRUNC: another thread
    # of this process creating the same index had its file truncated, then unlinked under it
    path = tmp_path / "index.sqlite"
    other_thread = tmp_path / f".index.sqlite.new-{os.getpid()}"
    other_thread.write_bytes(b"SQLite format 3\0 header being written")
    conn, _ = connect(path)
    conn.close()
    assert path.stat().st_size > 0
    assert other_thread.read_bytes() == b"SQLite format 3\0 header being written"


def test_a_creation_killed_midway_leaves_nothing_after_the_next_open(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer runs: the creator killed with -9
    dead = [f".index.sqlite.new-{gone.pid}", f".index.sqlite.new-{gone.pid}-k3y_x9-wal"]
    alive = f".index.sqlite.new-{os.getppid()}-a1b2c3"  # a creator still at work
    for name in (*dead, alive, ".other.sqlite.new-1"):
        (tmp_path / name).write_bytes(b"x")
    conn, _ = connect(tmp_path / "index.sqlite")
    conn.close()
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert left == sorted([alive, ".other.sqlite.new-1"])


def test_the_in_process_fallback_names_a_damaged_index_in_one_json_line(home: Path, tmp_path: Path) -> None:
    # `python -m qmd_daemon.daemon search` (what ai-search runs without a daemon) printed SQLite's
    # traceback for a damaged page
    import json
    import sys

    path = _indexed(tmp_path)
    _scribble(path, 0.5)
    body = json.dumps({"query": "handler request value", "collection": "repo"})
    proc = subprocess.run(
        [sys.executable, "-m", "qmd_daemon.daemon", "search", "--request", body],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, QMD_DAEMON_HOME=str(home)),
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "index_error" and "move it away and run `qmd-daemon update`" in error["message"]


@pytest.mark.parametrize("mode", [0o000, 0o400])
def test_an_index_this_user_may_not_open_is_named_as_such_not_as_damaged(shared_tmp: Path, mode: int) -> None:
    # `unable to open database file` read "not a usable SQLite database ... move it away and
    # rebuild": the advice that throws away every vector over a file mode
    home = shared_tmp / "home"
    repo = write_tree(shared_tmp / "repo", {"a.py": "def kept_function():\n    return 1\n"})
    index = home / "cache" / "index.sqlite"
    script = (  # one process: a child of the other user may not start programs under /root
        "import os, sys; from pathlib import Path; from qmd_daemon.cli import main;"
        "from qmd_daemon.engine import Engine; engine = Engine();"
        "engine.update([engine.add_collection(Path(sys.argv[1])).name]); engine.close();"
        f"os.chmod({str(index)!r}, {mode}); sys.argv = ['qmd-daemon', 'status']; main()"
    )
    shared_tmp.chmod(0o777)  # the child, another user, writes the repository too

    done = python_as_another_user(home, "-c", script, str(repo))

    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"qmd-daemon: error: index {index} cannot be read and written by this user (permission denied);"
        " it need not be rebuilt: `chmod 600` it, or run as its owner\n"
    )


def test_the_in_process_fallback_says_an_os_error_as_the_cli_does(home: Path, tmp_path: Path) -> None:
    # ai-search printed `error: IsADirectoryError: [Errno 21] Is a directory: '...writer.lock'`
    # (`OSError: [Errno 28] No space left on device` on a full disk): Python's repr, not a line
    import json
    import sys

    repo = write_tree(tmp_path / "repo", {"a.py": "def kept_function():\n    return 1\n"})
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    lock = home / "cache" / "index.sqlite.writer.lock"
    lock.mkdir(parents=True)
    body = json.dumps({"query": "kept function", "path": str(repo), "refresh": True})
    proc = subprocess.run(
        [sys.executable, "-m", "qmd_daemon.daemon", "search", "--request", body],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, QMD_DAEMON_HOME=str(home)),
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["error"] == {"code": "internal", "message": f"Is a directory: {lock}"}
