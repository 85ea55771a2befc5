"""Nothing outside a collection's root is read, whatever links a repository holds or gains: the
scan leaves out files under a linked folder, and every read checks the file it opened."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.errors import UsageError
from qmd_daemon.ingest.indexer import _read
from qmd_daemon.ingest.scan import scan
from qmd_daemon.ingest.source_text import OutsideRoot, TooLarge, read_inside
from qmd_daemon.settings import DEFAULT_MASK
from tests.conftest import write_tree

TOKEN = "gho_k3yThatMustNeverBeIndexed"


def _secret_dir(tmp_path: Path) -> Path:
    """Stands for ~/.config/gh: a token the user never asked to index."""
    return write_tree(tmp_path / "dot-config-gh", {"hosts.yml": f"github.com:\n    oauth_token: {TOKEN}\n"})


def test_a_folder_replaced_by_a_link_in_a_git_repo_is_not_indexed(engine: Engine, tmp_path: Path) -> None:
    # issue 12 item 3: git still lists the tracked gh/hosts.yml once gh/ is a link to ~/.config/gh
    secret = _secret_dir(tmp_path)
    repo = write_tree(tmp_path / "repo", {"gh/hosts.yml": "github.com:\n  user: me\n", "app.py": "x = 1\n"})
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    shutil.rmtree(repo / "gh")
    os.symlink(secret, repo / "gh")

    report = engine.update([engine.add_collection(repo).name])[0]

    assert engine.search("oauth_token") == [] and engine.search(TOKEN) == []
    assert report.files == 1 and report.skipped == {"symlink_outside_root": 1}


def test_a_root_that_became_a_link_is_not_followed(engine: Engine, tmp_path: Path) -> None:
    # review finding: `collection add proj/docs`, then `rm -r docs; ln -s ~/.ssh docs`: the next
    # update resolved the root again and indexed the private key
    secret = _secret_dir(tmp_path)
    docs = write_tree(tmp_path / "proj" / "docs", {"guide.md": "# Guide\nHow to start.\n"})
    name = engine.add_collection(docs).name
    engine.update([name])
    shutil.rmtree(docs)
    os.symlink(secret, docs)

    with pytest.raises(UsageError, match="now leads to .*a symbolic link"):
        engine.update([name])
    assert engine.search(TOKEN) == [] and engine.search("oauth_token") == []


def test_a_folder_swapped_for_a_link_after_the_scan_is_not_read(tmp_path: Path) -> None:
    secret = _secret_dir(tmp_path)
    root = write_tree(tmp_path / "repo", {"gh/hosts.yml": "user: someone\n"}).resolve()
    scanned = scan(root, mask=DEFAULT_MASK, ignore=[], excludes=(), max_file_bytes=1 << 20).files
    assert [f.path for f in scanned] == ["gh/hosts.yml"]
    shutil.rmtree(root / "gh")
    os.symlink(secret, root / "gh")  # between the scan and the read

    assert _read(root, scanned[0], 1 << 20) == "symlink_outside_root"


def test_links_that_stay_inside_the_root_are_read(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {"src/a.py": "A = 1\n"}).resolve()
    os.symlink(root / "src" / "a.py", root / "alias.py")
    os.symlink(root / "src", root / "lib")
    assert read_inside(root, "alias.py", 64) == read_inside(root, "lib/a.py", 64) == b"A = 1\n"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    os.mkfifo(root / "pipe.py")
    with pytest.raises(OSError, match="not a regular file"):
        read_inside(root, "pipe.py", 64)


def test_a_link_flipping_during_reads_never_leaks(tmp_path: Path) -> None:
    """The check is made on the opened file, so no interleaving of a swap and a read gets out:
    a check on the path followed by a read of the path would let some reads through."""
    secret = _secret_dir(tmp_path)
    root = write_tree(tmp_path / "repo", {"real/hosts.yml": "user: someone\n"}).resolve()
    stop = threading.Event()

    def flip() -> None:  # gh -> real/ (inside), gh -> ~/.config/gh (outside), again and again
        while not stop.is_set():
            for target in (root / "real", secret):
                os.symlink(target, root / "gh.tmp")
                os.replace(root / "gh.tmp", root / "gh")

    flipper = threading.Thread(target=flip)
    flipper.start()
    leaked = read = refused = 0
    try:
        for _ in range(3000):
            try:
                data = read_inside(root, "gh/hosts.yml", 1 << 20)
            except OutsideRoot:
                refused += 1
                continue
            except FileNotFoundError:
                continue
            read += 1
            leaked += TOKEN.encode() in data
    finally:
        stop.set()
        flipper.join()
    assert leaked == 0 and read > 0 and refused > 0


def test_a_file_grown_past_the_cap_after_the_scan_is_skipped_unread(engine: Engine, tmp_path: Path) -> None:
    # review item B: the cap came from the scan's stat, and the read took whatever was there then
    cap = engine.settings.max_file_bytes
    root = write_tree(tmp_path / "repo", {"big.py": "SMALL = 1\n", "app.py": "x = 1\n"}).resolve()
    listed = scan(root, mask=DEFAULT_MASK, ignore=[], excludes=(), max_file_bytes=cap).files
    scanned = {f.path: f for f in listed}
    assert set(scanned) == {"big.py", "app.py"}
    (root / "big.py").write_bytes(b"GROWN = 1\n" * (cap // 10 + 1))  # between the scan and the read

    assert _read(root, scanned["big.py"], cap) == "too_large"
    with pytest.raises(TooLarge):
        read_inside(root, "big.py", cap)
    assert read_inside(root, "app.py", cap) == b"x = 1\n"
