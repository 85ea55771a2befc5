"""The watcher on real temporary repositories: the scanner's ignore rules decide which changes
count, and (inotify) `flush` takes in a change made just before it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qmd_daemon.daemon.watch_scope import watch_dirs
from qmd_daemon.daemon.watcher import RootSpec, RootWatcher
from qmd_daemon.ingest.scan import git_rules, scan
from qmd_daemon.settings import DEFAULT_EXCLUDES, DEFAULT_MASK
from tests.conftest import write_tree
from tests.daemon.support import make_repo

LINUX = sys.platform.startswith("linux")
BACKENDS = [
    pytest.param("inotify", marks=pytest.mark.skipif(not LINUX, reason="inotify is Linux only")),
    "watchfiles",
]
SPEC = RootSpec(DEFAULT_MASK, ("scratch/",))


@pytest.fixture(autouse=True)
def no_user_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git's own ignore rules only (no global excludes file from the machine running the tests)."""
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-home" / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def ignoring_repo(root: Path) -> Path:
    repo = make_repo(
        root,
        {
            ".gitignore": "build-out/\n*.log\n/generated/\nforced/\n",
            "src/app.py": "def tracked_function():\n    return 1\n",
            "src/.gitignore": "local_*.py\n",
            "docs/guide.md": "# Guide\n",
            "node_modules/dep/index.js": "module.exports = 1\n",
            ".venv/lib/site.py": "x = 1\n",
            "build/out.py": "z = 1\n",
            "build-out/bundle.js": "var a;\n",
            "generated/schema.py": "y = 2\n",
            "scratch/notes.py": "w = 3\n",
            "forced/keep.py": "def kept_despite_gitignore():\n    pass\n",
        },
    )
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-f", "forced/keep.py"], check=True)
    return repo.resolve()


def ignored_changes(repo: Path) -> None:
    """A change in every kind of path a scan of `repo` leaves out."""
    (repo / "node_modules" / "dep" / "new.js").write_text("module.exports = 2\n")
    (repo / "node_modules" / "fresh").mkdir()
    (repo / "node_modules" / "fresh" / "a.js").write_text("1\n")
    (repo / ".venv" / "lib" / "site.py").write_text("x = 2\n")
    (repo / "build" / "out.py").write_text("z = 2\n")
    (repo / "build-out" / "bundle.js").write_text("var b;\n")
    (repo / "generated" / "schema.py").write_text("y = 3\n")
    (repo / "scratch" / "notes.py").write_text("w = 4\n")
    (repo / "app.log").write_text("log line\n")
    (repo / "src" / "debug.log").write_text("log line\n")
    (repo / "src" / "local_settings.py").write_text("DEBUG = True\n")
    (repo / "src" / "image.png").write_bytes(b"\x89PNG not in the mask")
    (repo / ".git" / "qmd-test").write_text("inside .git\n")
    (repo / "__pycache__").mkdir()
    (repo / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")


class Recorder:
    def __init__(self) -> None:
        self.calls: list[set[Path]] = []

    def __call__(self, roots: set[Path]) -> None:
        self.calls.append(set(roots))

    async def wait_for_call(self, count: int, timeout: float = 60.0) -> None:  # a ceiling
        deadline = time.monotonic() + timeout
        while len(self.calls) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.05)


def inotify_watches() -> int:
    """The inotify watches this process holds, as the kernel lists them (/proc/self/fdinfo)."""
    count = 0
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            with open(f"/proc/self/fdinfo/{fd}") as info:
                count += sum(line.startswith("inotify wd:") for line in info)
        except OSError:  # an fd closed meanwhile
            pass
    return count


async def start(recorder: Recorder, repo: Path, backend: str, **kw: int) -> RootWatcher:
    watcher = RootWatcher(
        recorder,
        DEFAULT_EXCLUDES,
        debounce_ms=kw.get("debounce_ms", 300),
        step_ms=kw.get("step_ms", 50),
        backend=backend,
    )
    before = inotify_watches() if LINUX else 0
    await watcher.sync({repo: SPEC})
    if LINUX:
        # watchfiles sets its watches up in a task that runs after sync() returns: a change made
        # before then is never seen. Wait for the kernel to hold one watch a folder (both backends
        # use inotify here); 60 s is a ceiling, not the expected time.
        deadline = time.monotonic() + 60
        while inotify_watches() - before < len(watcher.dirs) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert inotify_watches() - before >= len(watcher.dirs), "the watcher set up no watches"
    else:  # no /proc to read the watches from (CI runs on Linux)
        await asyncio.sleep(0.3)  # watchfiles: its Rust watcher starts on a thread
    return watcher


@pytest.mark.parametrize("backend", BACKENDS)
async def test_ignored_paths_trigger_nothing_and_a_tracked_change_one_refresh(
    tmp_path: Path, backend: str
) -> None:
    repo = ignoring_repo(tmp_path / "proj")
    recorder = Recorder()
    watcher = await start(recorder, repo, backend)
    try:
        watched = {p.relative_to(repo).as_posix() for p in watcher.dirs}
        assert watched == {".", "src", "docs", "forced"}
        ignored_changes(repo)
        await asyncio.sleep(1.2)  # well past the debounce
        assert recorder.calls == []
        (repo / "src" / "app.py").write_text("def tracked_function():\n    return 2\n")
        await recorder.wait_for_call(1)
        await asyncio.sleep(0.8)
        assert recorder.calls == [{repo}]
        # git tracks this one although a .gitignore matches it: a scan indexes it, so it counts
        (repo / "forced" / "keep.py").write_text("def kept_despite_gitignore():\n    return 1\n")
        await recorder.wait_for_call(2)
        await asyncio.sleep(0.5)
        assert recorder.calls == [{repo}, {repo}]
    finally:
        await watcher.close()


@pytest.mark.skipif(not LINUX, reason="inotify is Linux only")
async def test_flush_takes_in_a_change_made_just_before(tmp_path: Path) -> None:
    repo = ignoring_repo(tmp_path / "proj")
    recorder = Recorder()
    # a debounce far longer than the test: only flush() can hand the change on
    watcher = await start(recorder, repo, "inotify", debounce_ms=60_000, step_ms=60_000)
    try:
        assert watcher.vouches(repo)
        assert watcher.flush(repo) is True and recorder.calls == []  # nothing changed: nothing to do
        ignored_changes(repo)
        assert watcher.flush(repo) is True and recorder.calls == []
        (repo / "docs" / "guide.md").write_text("# Guide, edited\n")
        assert watcher.flush(repo) is True  # no await in between: the kernel's queue is read here
        assert recorder.calls == [{repo}]
        # a folder created now is watched as its event arrives, so what lands in it counts too
        (repo / "src" / "newpkg" / "deep").mkdir(parents=True)
        watcher.flush(repo)
        assert repo / "src" / "newpkg" / "deep" in watcher.dirs
        (repo / "src" / "newpkg" / "deep" / "mod.py").write_text("def created_later():\n    pass\n")
        watcher.flush(repo)
        assert recorder.calls == [{repo}, {repo}, {repo}]
        # a folder removed is no longer watched
        for path in sorted((repo / "src" / "newpkg").rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        (repo / "src" / "newpkg").rmdir()
        watcher.flush(repo)
        assert not [d for d in watcher.dirs if "newpkg" in d.parts]
    finally:
        await watcher.close()


@pytest.mark.skipif(not LINUX, reason="inotify is Linux only")
async def test_a_changed_gitignore_relists_the_folders(tmp_path: Path) -> None:
    repo = ignoring_repo(tmp_path / "proj")
    (repo / "extra").mkdir()
    (repo / "extra" / "untracked.py").write_text("u = 1\n")
    recorder = Recorder()
    watcher = await start(recorder, repo, "inotify", debounce_ms=60_000, step_ms=60_000)
    try:
        assert repo / "extra" in watcher.dirs
        with (repo / ".gitignore").open("a") as handle:
            handle.write("extra/\ndocs/\n")
        assert watcher.flush(repo) is False  # listing its folders again: not vouched meanwhile
        assert recorder.calls == [{repo}]  # what a scan takes changed: that is a change
        deadline = time.monotonic() + 10
        while not watcher.vouches(repo) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert watcher.vouches(repo)
        assert repo / "extra" not in watcher.dirs
        assert repo / "docs" in watcher.dirs  # git tracks docs/guide.md: a scan still takes it
    finally:
        await watcher.close()


GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "protocol.file.allow=always"]
# A submodule is its own repository: the outer .gitignore's `*.log`, `build-out/` and `vendored/`
# do not reach into it, its own `*_tmp.py` does; a deeper .gitignore's negation beats a pattern
# of a .gitignore above it.
INNER_FILES = {".gitignore": "*_tmp.py\n", "src/core.py": "def inner_core():\n    return 1\n"}
NEGATED = {
    "src/.gitignore": "local_*.py\n",
    "src/lib/.gitignore": "!local_kept.py\n",
    "src/lib/local_kept.py": "kept = 1\n",
    "src/lib/local_other.py": "dropped = 1\n",
}
IN_SUBMODULE = {
    "build-out/tool.py": "1\n",
    "app.log": "1\n",
    "src/untracked.py": "1\n",
    "scratch_tmp.py": "1\n",
}


def repo_with_submodules(tmp_path: Path) -> Path:
    """An outer repository (ignoring_repo's rules) with a submodule at libs/inner and one under a
    folder its .gitignore ignores (vendored/dep), each holding files only the outer rules match."""
    outer = ignoring_repo(tmp_path / "outer")
    write_tree(outer, {".gitignore": (outer / ".gitignore").read_text() + "vendored/\n", **NEGATED})
    subprocess.run([*GIT, "-C", str(outer), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(outer), "commit", "-qm", "c"], check=True)
    inner = make_repo(tmp_path / "inner", INNER_FILES)
    subprocess.run([*GIT, "-C", str(inner), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(inner), "commit", "-qm", "c"], check=True)
    for folder in ("libs/inner", "vendored/dep"):
        subprocess.run(
            [*GIT, "-C", str(outer), "submodule", "add", "-q", "-f", str(inner), folder], check=True
        )
        write_tree(outer / folder, IN_SUBMODULE)
    return outer


def test_the_watched_folders_and_rules_agree_with_the_scanner(tmp_path: Path) -> None:
    """Every file a scan indexes sits in a watched folder and passes the rules, and no other does
    (a checked-out submodule's files too: the scan lists them with the submodule's git and its
    ignore rules alone)."""
    outer = repo_with_submodules(tmp_path)
    git_repo = ignoring_repo(tmp_path / "git")
    write_tree(git_repo, NEGATED)
    for repo, git in ((git_repo, True), (tmp_path / "plain", False), (outer, True)):
        if not git:
            for rel, text in {
                ".gitignore": "*.log\nout/\n!keep.log\n",
                "a.py": "1\n",
                "b.log": "2\n",
                "keep.log": "3\n",
                "out/c.py": "4\n",
                "sub/.gitignore": "/d.py\n",
                "sub/d.py": "5\n",
                "sub/e.py": "6\n",
                "sub/deeper/d.py": "7\n",
                "node_modules/x.js": "8\n",
                **NEGATED,
            }.items():
                (repo / rel).parent.mkdir(parents=True, exist_ok=True)
                (repo / rel).write_text(text)
        scanned = {
            f.path
            for f in scan(
                repo, mask="**", ignore=list(SPEC.ignore), excludes=DEFAULT_EXCLUDES, max_file_bytes=1 << 20
            ).files
        }
        rules = git_rules(repo, mask="**", ignore=list(SPEC.ignore), excludes=DEFAULT_EXCLUDES)
        folders, complete = watch_dirs(repo, rules)
        assert complete
        seen = set()
        for folder in folders:
            for entry in os.scandir(repo / folder if folder else repo):
                rel = f"{folder}/{entry.name}" if folder else entry.name
                if entry.is_file() and not rules.ignored(rel):
                    seen.add(rel)
        assert seen == scanned, (git, seen ^ scanned)
        assert "src/lib/local_kept.py" in scanned and "src/lib/local_other.py" not in scanned
        assert scanned  # the trees are not empty
    for folder in ("libs/inner", "vendored/dep"):
        assert {f"{folder}/app.log", f"{folder}/build-out/tool.py", f"{folder}/src/core.py"} <= scanned
        assert f"{folder}/scratch_tmp.py" not in scanned


async def nothing_then_one_refresh_each(recorder: Recorder, root: Path, edits: tuple[str, ...]) -> None:
    """No call for what was done so far (well past the debounce), then one per file of `edits`
    edited in turn."""
    await asyncio.sleep(1.2)
    assert recorder.calls == []
    for count, rel in enumerate(edits, 1):
        (root / rel).write_text("edited = 1\n")
        await recorder.wait_for_call(count)
        assert recorder.calls == [{root}] * count, rel


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_edit_in_a_submodule_counts_under_its_own_ignore_rules(tmp_path: Path, backend: str) -> None:
    """A file of a submodule that the outer .gitignore matches (the submodule's does not) is
    indexed, so its edit is a change; one the submodule's own .gitignore matches is not."""
    outer = repo_with_submodules(tmp_path)
    recorder = Recorder()
    watcher = await start(recorder, outer, backend)
    try:
        for folder in ("libs/inner", "vendored/dep"):
            (outer / folder / "scratch_tmp.py").write_text("2\n")
        (outer / "src" / "lib" / "local_other.py").write_text("2\n")
        edits = ("libs/inner/build-out/tool.py", "vendored/dep/src/untracked.py", "src/lib/local_kept.py")
        await nothing_then_one_refresh_each(recorder, outer, edits)
    finally:
        await watcher.close()


def excluding_repo(tmp_path: Path) -> Path:
    """repo_with_submodules with rules outside the .gitignore files, as git reads them: the outer
    repository's info/exclude (a folder, a suffix, a path anchored at its top), the submodule's own
    info/exclude (in .git/modules/...), and the user's excludes file (core.excludesFile unset: its
    default under XDG_CONFIG_HOME). The root .gitignore re-includes one excluded name: a .gitignore
    comes before the exclude files."""
    outer = repo_with_submodules(tmp_path)
    (outer / ".git" / "info" / "exclude").write_text("secret_notes/\n*.draft.py\n/src/anchored_*.py\n")
    with (outer / ".gitignore").open("a") as handle:
        handle.write("!kept.draft.py\n")
    inner_exclude = subprocess.run(
        ["git", "-C", str(outer / "libs" / "inner"), "rev-parse", "--git-path", "info/exclude"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    inner_path = outer / "libs" / "inner" / inner_exclude
    inner_path.parent.mkdir(parents=True, exist_ok=True)
    inner_path.write_text("inner_private.py\n")
    user_ignore = tmp_path / "user-home" / ".config" / "git" / "ignore"
    user_ignore.parent.mkdir(parents=True, exist_ok=True)
    user_ignore.write_text("*.local.py\n")
    write_tree(outer, {
        "secret_notes/plan.py": "1\n", "src/x.draft.py": "1\n", "src/kept.draft.py": "1\n",
        "src/anchored_a.py": "1\n", "src/lib/anchored_b.py": "1\n", "src/conf.local.py": "1\n",
        "libs/inner/inner_private.py": "1\n", "inner_private.py": "1\n",
    })  # fmt: skip
    return outer


EXCLUDED = ("secret_notes/plan.py", "src/x.draft.py", "src/anchored_a.py", "src/conf.local.py",
            "libs/inner/inner_private.py")  # fmt: skip
INDEXED = ("src/kept.draft.py", "src/lib/anchored_b.py", "inner_private.py")


def test_the_exclude_files_rule_as_in_the_scanner(tmp_path: Path) -> None:
    """info/exclude and the user's excludes file, lowest precedence, in the watcher's rules as in
    a scan's git listing, for a root at the repository's top and one below it."""
    outer = excluding_repo(tmp_path)
    for root in (outer, outer / "src"):
        prefix = "" if root == outer else "src/"
        scanned = {f.path for f in scan(root, mask="**", ignore=[], excludes=DEFAULT_EXCLUDES,
                                        max_file_bytes=1 << 20).files}  # fmt: skip
        rules = git_rules(root, mask="**", ignore=[], excludes=DEFAULT_EXCLUDES)
        for rel in (*EXCLUDED, *INDEXED):
            if rel.startswith(prefix):
                local = rel.removeprefix(prefix)
                assert (local in scanned) == (rel in INDEXED) == (not rules.ignored(local)), (root, rel)
    watched = {p.relative_to(outer).as_posix() for p in watch_dirs(outer, git_rules(
        outer, mask="**", ignore=[], excludes=DEFAULT_EXCLUDES))[0] for p in [outer / p]}  # fmt: skip
    assert "secret_notes" not in watched and "src" in watched


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_edit_in_an_excluded_file_triggers_nothing(tmp_path: Path, backend: str) -> None:
    """A file info/exclude or the user's excludes file leaves out is never indexed: its edits
    triggered a refresh for nothing while the watcher read the .gitignore files alone."""
    outer = excluding_repo(tmp_path)
    recorder = Recorder()
    watcher = await start(recorder, outer, backend)
    try:
        assert outer / "secret_notes" not in watcher.dirs
        for rel in EXCLUDED:
            (outer / rel).write_text("edited = 1\n")
        (outer / "src" / "new.draft.py").write_text("1\n")
        await nothing_then_one_refresh_each(recorder, outer, INDEXED)
    finally:
        await watcher.close()


@pytest.mark.skipif(not LINUX, reason="inotify is Linux only")
@pytest.mark.parametrize("flush", [True, False], ids=["a search flushes", "the changes settle"])
async def test_a_submodule_added_while_watched_is_watched_under_its_own_rules(
    tmp_path: Path, flush: bool
) -> None:
    """`git submodule add` into a folder the outer .gitignore ignores: git lists the submodule's
    files (a gitlink is tracked), so a scan indexes them, but the watcher learned of it only at
    its next re-list (a .gitignore edit, an overflow) and vouched for the root meanwhile: an
    edit there went unseen. A changed .gitmodules (or `.git`) re-lists the root once its changes
    settle, and the root is not vouched for until then."""
    outer = ignoring_repo(tmp_path / "outer")
    with (outer / ".gitignore").open("a") as handle:
        handle.write("vendored/\n")
    inner = make_repo(tmp_path / "inner", INNER_FILES)
    subprocess.run([*GIT, "-C", str(inner), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(inner), "commit", "-qm", "c"], check=True)
    recorder = Recorder()
    watcher = await start(recorder, outer, "inotify")
    try:
        assert watcher.vouches(outer)
        subprocess.run([*GIT, "-C", str(outer), "submodule", "add", "-q", "-f", str(inner), "vendored/dep"],
                       check=True)  # fmt: skip
        if flush:  # what a search does first
            watcher.flush(outer)
            assert not watcher.vouches(outer)  # until its folders are listed again
        else:
            await recorder.wait_for_call(1)  # the debounce: the change, then a re-list
        deadline = time.monotonic() + 20  # a ceiling
        while not (watcher.vouches(outer) and outer / "vendored" / "dep" / "src" in watcher.dirs):
            assert time.monotonic() < deadline, sorted(watcher.dirs)
            await asyncio.sleep(0.05)
        await recorder.wait_for_call(1)  # one refresh, after the re-list
        await asyncio.sleep(0.8)
        assert recorder.calls == [{outer}]
        calls = len(recorder.calls)
        (outer / "vendored" / "dep" / "src" / "core.py").write_text("def inner_core():\n    return 2\n")
        await recorder.wait_for_call(calls + 1)
        assert recorder.calls[calls:] == [{outer}]
        # the submodule's own rules: its *_tmp.py is ignored, the outer *.log is not
        (outer / "vendored" / "dep" / "scratch_tmp.py").write_text("1\n")
        await asyncio.sleep(1.2)
        assert len(recorder.calls) == calls + 1
    finally:
        await watcher.close()
