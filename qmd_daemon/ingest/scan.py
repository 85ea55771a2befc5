"""Which files of a collection root are indexed, with their size and mtime.

Inside git, git itself decides what is ignored (`ls-files --cached --others --exclude-standard`),
in the repository and in each of its checked-out submodules; elsewhere the tree is walked and its
.gitignore files applied with pathspec. Symlinks never lead outside the root (a linked file, or a
linked folder above a file git still lists), directory symlinks are not followed (no loops), and an
unreadable file or folder is skipped and counted. The indexer checks again where each file it reads
really is (`source_text.read_inside`).
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter
from pathlib import Path
from stat import S_ISLNK, S_ISREG
from typing import NamedTuple

import pathspec
from pathspec.pattern import RegexPattern
from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern
from pathspec.util import normalize_file

from clients._qmd_client import git_argv, git_executable  # one rule for how every part runs git
from qmd_daemon.config import mask_globs, mask_problem
from qmd_daemon.errors import UsageError
from qmd_daemon.file_types import byte_cap
from qmd_daemon.ingest.listings import Listing, Listings, chain_key, folder_stamp, rules_key


def compile_patterns(lines: list[str], what: str) -> pathspec.PathSpec:
    try:
        return pathspec.PathSpec.from_lines("gitignore", lines)
    except ValueError as exc:
        raise UsageError(f"invalid {what} pattern: {exc}") from None


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
# pathspec's regex for a gitignore pattern without a slash (`*.py`, `**/node_modules/`): the
# pattern `T` applies to any one component of a path (a folder's, or the file's name last).
_FOLDER_ENDS = ("/", "(?P<ps_d>/)")  # a pattern with a trailing slash: folders only
_COMPONENT_REGEX = re.compile(
    re.escape("^(?:.+/)?")
    + "(?P<tail>.+?)(?P<end>"
    + "|".join(map(re.escape, ("(?:/|$)", "(?:(?P<ps_d>/)|$)", *_FOLDER_ENDS)))
    + ")"
)


def _component_tail(pattern: pathspec.Pattern) -> tuple[str, bool] | None:
    """(T, folders only) of a gitignore pattern that git matches against each path component
    alone: no slash but a leading `**/` or a trailing one, no escape, no bracket (pathspec lets a
    bracket match a slash, git does not). None for any other pattern."""
    if not isinstance(pattern, GitIgnoreBasicPattern | GitIgnoreSpecPattern):
        return None
    if pattern.regex is None:
        return None
    glob = str(pattern.pattern).strip()
    while glob.startswith("**/"):
        glob = glob[3:]
    if "/" in glob.rstrip("/") or any(c in glob for c in "\\[]!"):
        return None
    shape = _COMPONENT_REGEX.fullmatch(pattern.regex.pattern)
    if shape is None or "/" in shape["tail"].replace("[^/]", ""):
        return None
    return shape["tail"], shape["end"] in _FOLDER_ENDS


_ANY_NAME = "[^/]*"  # pathspec's `*`


def _alternatives(patterns: list[str], flags: int) -> re.Pattern[str]:
    """One regex of the patterns (named groups, a folder marker that may repeat, made plain).
    Those that start with `*` share it, so a name is run over once, not once per pattern (the
    default mask's 235 names: x3.7 faster)."""
    plain = [_NAMED_GROUP.sub("(?:", p) for p in patterns]
    starred = [p[len(_ANY_NAME) :] for p in plain if p.startswith(_ANY_NAME)]
    parts = [f"(?:{p})" for p in plain if not p.startswith(_ANY_NAME)]
    if starred:
        parts.append(_ANY_NAME + "(?:" + "|".join(f"(?:{p})" for p in starred) + ")")
    return re.compile("|".join(parts) or "(?!)", flags)


def _including_matcher(tails: list[tuple[str, bool]], others: list[str], flags: int) -> PathMatcher:
    """Whether some including pattern matches a path. Patterns without a slash (`tails`: the
    mask, the built-in excludes, most .gitignore lines) apply to each component of the path alone,
    so each folder's answer is kept and a file costs one match of its name: a search of the whole
    path tried each of the mask's alternatives at every slash (60 in the bench homes' mask: 37 us
    a file). `others` are searched whole."""
    file_name = _alternatives([t for t, folders_only in tails if not folders_only], flags)
    folder_name = _alternatives([t for t, _ in tails], flags)
    whole = _alternatives(others, flags) if others else None
    folders: dict[str, bool] = {"": False}

    def in_folder(rel_dir: str) -> bool:  # some component of the folder's path matches
        hit = folders.get(rel_dir)
        if hit is None:
            if len(folders) > _FOLDER_CACHE:
                folders.clear()
                folders[""] = False
            head, _, name = rel_dir.rpartition("/")
            hit = folders[rel_dir] = in_folder(head) or folder_name.fullmatch(name) is not None
        return hit

    def matches(path: str) -> bool:
        if path.startswith(("/", "./")):
            path = normalize_file(path)
        if path.endswith("/"):
            hit = in_folder(path[:-1])
        else:
            head, _, name = path.rpartition("/")
            hit = in_folder(head) or file_name.fullmatch(name) is not None
        return hit or (whole is not None and whole.search(path) is not None)

    return matches


_FOLDER_CACHE = 200_000  # folders whose answer a matcher keeps (it lives as long as its patterns)


def fast_matcher(spec: pathspec.PathSpec) -> PathMatcher:
    """spec.match_file for a relative path, answered by `_including_matcher` when no pattern
    matches: nothing is matched (ignored) unless some including pattern matches, and a scan asks
    this of every file while pathspec's pure-Python backend tries the patterns one by one (235 for
    the default mask, more for a .gitignore). Only a path that some pattern matches goes to
    pathspec itself, for its negations and precedence."""
    including = [p for p in spec.patterns if p.include]
    regexes = [p.regex for p in including if isinstance(p, RegexPattern) and p.regex is not None]
    if len(regexes) != len(including) or len({r.flags for r in regexes}) > 1:
        return spec.match_file
    if not regexes:
        return lambda _path: False
    tails = [_component_tail(p) for p in including]
    try:
        may_match = _including_matcher(
            [t for t in tails if t is not None],
            [r.pattern for r, t in zip(regexes, tails, strict=True) if t is None],
            regexes[0].flags,
        )
    except re.error:
        return spec.match_file
    if all(p.include for p in spec.patterns if p.include is not None):
        return may_match
    return lambda path: may_match(path) and spec.match_file(path)


def compile_mask(pattern: str) -> pathspec.PathSpec:
    """A mask matches names whatever their case: `*.r` takes R's usual `.R`, `Makefile` a
    `makefile`, as `file_types.language_of` reads them."""
    problem = mask_problem(pattern)
    if problem:  # pathspec takes a lone `[` literally: `--mask '['` registered and indexed nothing
        raise UsageError(f"invalid mask {pattern!r}: {problem}")
    compiled = compile_patterns(mask_globs(pattern), "mask")
    return pathspec.PathSpec(_ignoring_case(p) for p in compiled.patterns)


def _ignoring_case(pattern: pathspec.Pattern) -> pathspec.Pattern:
    """The pattern (its glob text kept, for `_component_tail`) matching names whatever their case."""
    if not isinstance(pattern, RegexPattern) or pattern.regex is None:
        return pattern
    folded = copy.copy(pattern)
    folded.regex = re.compile(pattern.regex.pattern, pattern.regex.flags | re.IGNORECASE)
    return folded


PathMatcher = Callable[[str], bool]


# Compiled patterns are kept by their text, so a refresh compiles only what changed: compiling
# a mask and the .gitignore files of 34 collections was ~1,000 regexes (0.8 s) every update.
@lru_cache(maxsize=256)
def _compiled_rules(mask: str, ignore: tuple[str, ...]) -> tuple[PathMatcher, PathMatcher]:
    """(in the mask, in the excludes or ignore patterns) matchers for relative paths."""
    return fast_matcher(compile_mask(mask)), fast_matcher(compile_patterns(list(ignore), "ignore"))


# A .gitignore's verdict on a path relative to its folder: True ignored, False re-included by a
# negation (`!keep.txt`), None when none of its patterns matches (the file above then decides).
Verdict = Callable[[str], bool | None]


@lru_cache(maxsize=4096)
def _gitignore_verdict(text: str) -> Verdict:
    """git reads a path's .gitignore files deepest first and the first that matches it decides:
    `!keep.txt` below a root's `*.txt` keeps a/keep.txt, which an any-file-matches rule dropped
    (the watcher then dropped its edits while git listed it)."""
    spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
    ignored = fast_matcher(spec)
    negations = [_including(p) for p in spec.patterns if p.include is False]
    if not negations:
        return lambda path: True if ignored(path) else None
    negated = fast_matcher(pathspec.PathSpec(negations))
    return lambda path: True if ignored(path) else (False if negated(path) else None)


def _including(pattern: pathspec.Pattern) -> pathspec.Pattern:
    """A negation as an including pattern: whether it matches, not what it decides."""
    flipped = copy.copy(pattern)
    flipped.include = True
    return flipped


class ScannedFile(NamedTuple):
    """A file a scan found (a tuple: a no-change update makes one per file, 59k)."""

    path: str  # relative to the root, POSIX separators
    size: int
    mtime_ns: int


@dataclass
class ScanResult:
    files: list[ScannedFile] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


def find_git_root(path: Path) -> Path | None:
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


# what `git ls-files --others` says on stderr (exit 0) for a folder it cannot list: the untracked
# files in it were missing from the index without a word, where a walk counts `unreadable_dir`
_UNLISTABLE = re.compile(rb"^warning: could not open directory '", re.MULTILINE)


def _git_ls_files(root: Path, *selection: str, skipped: Counter[str] | None = None) -> list[str] | None:
    """`git ls-files` names under `root` (None outside git or when git fails); the folders it
    could not list are counted in `skipped`."""
    proc = run_git(root, "ls-files", "-z", *selection)
    if proc is None:
        return None
    unlistable = len(_UNLISTABLE.findall(proc.stderr))
    if unlistable and skipped is not None:
        skipped["unreadable_dir"] += unlistable
    return [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]


def run_git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    """`git -C root args...` (None outside git, or when git fails)."""
    git = git_executable()
    if git is None or find_git_root(root) is None:
        return None
    try:
        proc = subprocess.run(
            git_argv(git, str(root), *args),
            capture_output=True,
            env=dict(os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C"),  # LC_ALL: _UNLISTABLE's English
            stdin=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc if proc.returncode == 0 else None


def _git_candidates(root: Path, skipped: Counter[str]) -> list[str] | None:
    """git's names under `root`, and those of each checked-out submodule, each listed by its own
    git with its own ignore rules: `ls-files` stops at a submodule (`--recurse-submodules` takes
    no `--others`), while ripgrep and editors search its files, which are on disk."""
    names = _git_ls_files(root, "--cached", "--others", "--exclude-standard", skipped=skipped)
    if names is None:
        return None
    for folder in _submodules(root):
        names.extend(f"{folder}/{name}" for name in _git_candidates(root / folder, skipped) or ())
    return sorted(set(names))


def _submodules(root: Path) -> list[str]:
    """The submodules under `root` that are checked out (an uninitialised one is an empty folder,
    without .git). Asked of git only where a .gitmodules declares some: it costs a second listing."""
    top = find_git_root(root)
    if top is None or not (top / ".gitmodules").is_file():
        return []
    return [link for link in _gitlinks(root, top) if os.path.lexists(os.path.join(root, link, ".git"))]


_FileStamp = tuple[int, int, int] | None  # (mtime_ns, size, inode); None: no such file
_GITLINKS: dict[Path, tuple[tuple[_FileStamp, _FileStamp], list[str]]] = {}
_GITLINKS_KEPT = 256  # roots whose gitlinks are kept


def _gitlinks(root: Path, top: Path) -> list[str]:
    """The submodule folders git's index records under `root` (its gitlinks). `git ls-files
    --stage` lists the whole index (tens of ms in a large repository) and a search made inside a
    submodule asks this every time (daemon/api.py `_covers`): the answer is kept until the index
    file or .gitmodules changes (git replaces its index by a rename: a new inode at least)."""
    stamp = _links_stamp(top)
    kept = _GITLINKS.get(root)
    if stamp is not None and kept is not None and kept[0] == stamp:
        return kept[1]
    entries = _git_ls_files(root, "--stage") or ()
    links = [entry.partition("\t")[2] for entry in entries if entry.startswith("160000 ")]
    if stamp is not None and stamp == _links_stamp(top):  # not kept if the index moved meanwhile
        if len(_GITLINKS) >= _GITLINKS_KEPT:
            _GITLINKS.clear()
        _GITLINKS[root] = (stamp, links)
    return links


def _links_stamp(top: Path) -> tuple[_FileStamp, _FileStamp] | None:
    """What changes when the gitlinks of repository `top` may have: its index file and .gitmodules
    (None when the index cannot be found: nothing is kept)."""
    index = _index_file(top)
    index_stamp = _file_stamp(index) if index is not None else None
    return None if index_stamp is None else (index_stamp, _file_stamp(top / ".gitmodules"))


def _index_file(top: Path) -> Path | None:
    """The index file of the repository whose top level is `top`: .git/index, or in the folder a
    `.git` file points to (a submodule, a worktree). None when it cannot be told."""
    dot_git = top / ".git"
    if dot_git.is_dir():
        return dot_git / "index"
    try:
        pointer = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not pointer.startswith("gitdir:"):
        return None
    return (top / pointer[len("gitdir:") :].strip()) / "index"


def _file_stamp(path: Path) -> _FileStamp:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size, stat.st_ino


def is_submodule(folder: Path) -> bool:
    """Whether the git top level `folder` is a checked-out submodule of the repository above it
    (whose listing then holds its files), not a clone or worktree that merely lies inside it."""
    above = find_git_root(folder.parent)
    return above is not None and folder.relative_to(above).as_posix() in _submodules(above)


def submodule_folders(root: Path) -> set[str]:
    """Every checked-out submodule under `root`, nested ones too (relative, POSIX separators)."""
    found: set[str] = set()
    for folder in _submodules(root):
        found.add(folder)
        found.update(f"{folder}/{inner}" for inner in submodule_folders(root / folder))
    return found


def git_rules(root: Path, *, mask: str, ignore: list[str], excludes: tuple[str, ...]) -> IgnoreRules:
    """The rules that decide as a scan's git listing of `root` does (the watcher's): files git
    tracks in spite of a .gitignore kept, each submodule under its own .gitignore files only,
    none of the outer repository's, and each repository's exclude files (`_exclude_files`) below
    its .gitignore files. Outside git: the rules of a walk."""
    repos = submodule_folders(root)
    return IgnoreRules(
        root, mask=mask, ignore=ignore, excludes=excludes,
        keep=tracked_but_ignored(root), repos=repos,
        bases={rel: _exclude_verdicts(root / rel if rel else root) for rel in ("", *repos)},
    )  # fmt: skip


def _exclude_files(folder: Path) -> list[Path]:
    """The files `git ls-files --exclude-standard` reads beside the .gitignore files, lowest
    precedence first: core.excludesFile (git's default, $XDG_CONFIG_HOME/git/ignore, when unset),
    then the repository's own info/exclude (in its common git folder: a worktree's, a submodule's),
    for the repository holding `folder` (git's relative answers are relative to it). Asked of git
    when the rules are made (a watch starts or re-lists), never per event."""
    configured = run_git(folder, "config", "--path", "--get", "core.excludesFile")
    name = configured.stdout.decode("utf-8", "surrogateescape").strip() if configured else ""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    try:
        if name:
            user = [folder / Path(name).expanduser()]  # an absolute path stays as it is
        else:
            user = [(Path(xdg) if xdg else Path.home() / ".config") / "git" / "ignore"]
    except RuntimeError:  # no home folder to expand (`~`): git finds none either
        user = []
    info = run_git(folder, "rev-parse", "--git-path", "info/exclude")
    own = info.stdout.decode("utf-8", "surrogateescape").strip() if info else ""
    return [*user, *([folder / own] if own else [])]


def _exclude_verdicts(root: Path) -> tuple[Verdict, ...]:
    """The verdicts that apply at `root` below its own .gitignore (IgnoreRules' `bases`), lowest
    precedence first: the exclude files of its repository (`_exclude_files`), then, for a root
    below the repository's top, the .gitignore files of the folders from the top down to it (a
    scan's `git ls-files` there reads them all). Each pattern is relative to its own folder: a
    path under `root` is read with the folders between."""
    top = find_git_root(root)
    if top is None:
        return ()
    chain: list[Verdict] = []
    rel_root = root.relative_to(top).as_posix() if top != root else ""
    parts = rel_root.split("/") if rel_root else []
    files = [(path, rel_root) for path in _exclude_files(root)]
    files += [(top.joinpath(*parts[:i], ".gitignore"), "/".join(parts[i:])) for i in range(len(parts))]
    for path, between in files:
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError:  # none (the usual case), or unreadable: git skips it too
            continue
        verdict = _gitignore_verdict(text)
        chain.append(verdict if not between else _prefixed(verdict, between + "/"))
    return tuple(chain)


def _prefixed(verdict: Verdict, prefix: str) -> Verdict:
    return lambda path: verdict(prefix + path)


def tracked_but_ignored(root: Path) -> set[str]:
    """Files git tracks although a .gitignore matches them (`git add -f`): `ls-files` lists them,
    so they are indexed, and a watcher must not drop their changes. Empty outside git."""
    kept = set(_git_ls_files(root, "--cached", "--ignored", "--exclude-standard") or ())
    for folder in _submodules(root):
        kept.update(f"{folder}/{name}" for name in tracked_but_ignored(root / folder))
    return kept


class IgnoreRules:
    """What a scan of `root` leaves out, as one matcher: the built-in excludes and the collection's
    own ignore patterns (gitignore syntax), the mask (files only), and the .gitignore files of the
    tree, each applying below its folder as git applies them (an ignored folder hides everything
    in it, a deeper file's verdict comes first). The walk below lists a tree without git with it;
    the daemon's watcher drops the events of paths it ignores (`git_rules`). `keep`: files indexed
    although a .gitignore matches them; `repos`: folders that are repositories of their own
    (checked-out submodules), where the .gitignore files above stop applying, as in git; `bases`:
    for the root ('') and each of `repos`, the verdicts applying below every .gitignore there
    (core.excludesFile, info/exclude, the .gitignore files above a root below its repository's
    top: `git_rules`), lowest precedence first."""

    def __init__(
        self,
        root: Path,
        *,
        mask: str,
        ignore: list[str],
        excludes: tuple[str, ...],
        keep: set[str] | frozenset[str] = frozenset(),
        repos: set[str] | frozenset[str] = frozenset(),
        bases: Mapping[str, tuple[Verdict, ...]] | None = None,
    ):
        self.root = root
        self._in_mask, self._in_excludes = _compiled_rules(mask, (*excludes, *ignore))
        self.keep = keep
        self.repos = repos
        self._bases = bases or {}
        # folders holding a kept file or a submodule (a gitlink is tracked: git lists the submodule
        # even where a .gitignore above matches its folder), and each one's folders above
        self._keep_dirs = {k.rsplit("/", i)[0] for k in keep for i in range(1, k.count("/") + 1)}
        self._keep_dirs.update(r.rsplit("/", i)[0] for r in repos for i in range(r.count("/") + 1))
        self._specs: dict[str, Verdict | None] = {}
        self._chains: dict[str, tuple[tuple[int, Verdict], ...]] = {}
        self._texts: dict[str, str] = {}  # the .gitignore files read, by folder
        self._dirs: dict[str, bool] = {}
        self.unreadable = 0

    def _spec(self, rel_dir: str) -> Verdict | None:
        """The .gitignore of folder `rel_dir` ('' for the root), read once."""
        if rel_dir not in self._specs:
            spec: Verdict | None = None
            try:
                with open(os.path.join(self.root, rel_dir, ".gitignore"), "rb") as handle:
                    text = self._texts[rel_dir] = handle.read().decode("utf-8", errors="replace")
                spec = _gitignore_verdict(text)
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                pass
            except OSError:  # a folder without search permission (EACCES)
                self.unreadable += 1
            self._specs[rel_dir] = spec
        return self._specs[rel_dir]

    def listed(self, rel_dir: str, *, holds_gitignore: bool) -> None:
        """What a walk found in folder `rel_dir`: no .gitignore there spares the open that
        `_spec` would try (one a folder, 12k of a no-change update)."""
        if not holds_gitignore:
            self._specs.setdefault(rel_dir, None)

    def gitignore_text(self, rel_dir: str) -> str | None:
        """The text of the .gitignore in `rel_dir` (None: none, or unreadable), read once."""
        self._spec(rel_dir)
        return self._texts.get(rel_dir)

    def _gitignores(self, rel_dir: str) -> tuple[tuple[int, Verdict], ...]:
        """The .gitignore files that apply in folder `rel_dir` (its own and those above up to its
        repository's top, root first), each with the length of its folder's prefix, cut from a
        path to match it."""
        chain = self._chains.get(rel_dir)
        if chain is None:
            head = rel_dir.rpartition("/")[0]
            # a repository's exclude files come first: the lowest precedence, as git orders them
            top = not rel_dir or rel_dir in self.repos
            cut = len(rel_dir) + 1 if rel_dir else 0
            bases = tuple((cut, verdict) for verdict in self._bases.get(rel_dir, ()))
            above = self._gitignores(head) if not top else bases
            own = self._spec(rel_dir)
            chain = (*above, (cut, own)) if own is not None else above
            self._chains[rel_dir] = chain
        return chain

    def _matched_by_gitignore(self, rel: str, is_dir: bool) -> bool:
        local_end = "/" if is_dir else ""
        for cut, verdict in reversed(self._gitignores(rel.rpartition("/")[0])):  # deepest first
            decided = verdict(rel[cut:] + local_end)
            if decided is not None:
                return decided
        return False

    def git_ignored(self, rel: str, is_dir: bool) -> bool:
        """A .gitignore hides `rel` (a POSIX path relative to the root), or a folder above it."""
        if rel in self.keep or (is_dir and rel in self._keep_dirs):
            return False
        head, _, _ = rel.rpartition("/")
        if head and self.dir_git_ignored(head):
            return True
        return self._matched_by_gitignore(rel, is_dir)

    def dir_git_ignored(self, rel_dir: str) -> bool:
        if rel_dir not in self._dirs:
            self._dirs[rel_dir] = self.git_ignored(rel_dir, True)
        return self._dirs[rel_dir]

    def excluded(self, rel: str, is_dir: bool = False) -> bool:
        """The excludes or the collection's ignore patterns drop `rel`, or (a file) the mask does."""
        if is_dir:
            return rel.split("/")[-1] == ".git" or self._in_excludes(rel + "/")
        # a submodule's .git is a file (`gitdir: ...`): git's pointer, never lists it, never source
        return not self._in_mask(rel) or self._in_excludes(rel) or rel.endswith("/.git") or rel == ".git"

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether a scan of the root would leave `rel` out (or everything in it, for a folder)."""
        return self.excluded(rel, is_dir) or self.git_ignored(rel, is_dir)


_NAME = attrgetter("name")


def _walk_candidates(
    root: Path, rules: IgnoreRules, skipped: Counter[str], listings: Listings | None = None
) -> Iterator[tuple[str, os.DirEntry[str] | None]]:
    """Walk without following directory links, applying each folder's .gitignore below it; folder
    by folder, so a caller that has seen enough (root_policy's size caps) stops the walk. Depth
    first in name order, a folder's files before its subfolders; an ignored or excluded folder is
    never entered. Each file comes with its listing entry, whose `stat` is the scan's one call
    (None for a file taken from `listings`, the records of an earlier walk: ingest/listings.py),
    and `listings` is saved when the walk ends."""
    base = os.path.join(root, "")  # a string ending in the separator: joined to by `+`
    pending = [("", listings.key if listings else "")]  # (folder, the rules' key above it)
    while pending:
        rel_dir, above = pending.pop()
        path = base + rel_dir
        listed_at = time.time_ns()
        try:
            folder = os.lstat(path)
            if S_ISLNK(folder.st_mode):  # a folder replaced by a link since its parent was listed
                continue
            record = listings.recorded(rel_dir, folder) if listings else None
            if record is not None and record.key != _key(above, rules, rel_dir, record.gitignore):
                record = None  # a .gitignore from the root down to here was edited
            if record is None:
                with os.scandir(path) as listing:
                    entries = sorted(listing, key=_NAME)
        except OSError:
            skipped["unreadable_dir"] += 1
            continue
        if record is not None and listings is not None:
            listings.keep(rel_dir, record)
            key = record.key
            files, folders = _from_record(rel_dir, record)
        else:
            gitignore = any(entry.name == ".gitignore" for entry in entries)
            key = _key(above, rules, rel_dir, gitignore) if listings else ""
            files, folders = _from_listing(rel_dir, entries, rules)
            if listings is not None:
                names = tuple(rel.rpartition("/")[2] for rel, _ in files)
                subfolders = tuple(rel.rpartition("/")[2] for rel in folders)
                record = Listing(*folder_stamp(folder), key, gitignore, names, subfolders)
                listings.record(rel_dir, record, listed_at)
        yield from files
        pending.extend((rel, key) for rel in reversed(folders))
    if rules.unreadable:
        skipped["unreadable"] += rules.unreadable
    if listings is not None:
        listings.save()


def _key(above: str, rules: IgnoreRules, rel_dir: str, gitignore: bool) -> str:
    """The rules' key in folder `rel_dir` (ingest/listings.py), its .gitignore read if it holds one."""
    rules.listed(rel_dir, holds_gitignore=gitignore)
    return chain_key(above, rules.gitignore_text(rel_dir) if gitignore else None)


_Candidates = list[tuple[str, "os.DirEntry[str] | None"]]


def _from_listing(
    rel_dir: str, entries: list[os.DirEntry[str]], rules: IgnoreRules
) -> tuple[_Candidates, list[str]]:
    """(candidate files, subfolders to enter) of a folder's fresh listing."""
    prefix = f"{rel_dir}/" if rel_dir else ""
    files: _Candidates = []
    folders: list[str] = []
    for entry in entries:
        rel = prefix + entry.name
        kind = _kind(entry)
        if kind == "folder":
            if not rules.ignored(rel, True):
                folders.append(rel)
        elif kind == "link to a folder":  # never followed (no loops), never a file
            continue
        # The mask first: it drops most files of a tree in one regex match, before the
        # .gitignore files above are consulted.
        elif not rules.excluded(rel) and not rules.git_ignored(rel, False):
            files.append((rel, entry))
    return files, folders


def _from_record(rel_dir: str, record: Listing) -> tuple[_Candidates, list[str]]:
    prefix = f"{rel_dir}/" if rel_dir else ""
    return [(prefix + name, None) for name in record.files], [prefix + name for name in record.folders]


def _kind(entry: os.DirEntry[str]) -> str:
    """What a listed entry is: "folder", "link to a folder" or "file" (anything else: a link whose
    target cannot be read is a file here, which the scan then skips as a broken link)."""
    try:
        if entry.is_dir(follow_symlinks=False):
            return "folder"
        return "link to a folder" if entry.is_symlink() and entry.is_dir() else "file"
    except OSError:
        return "file"


def scan(
    root: Path,
    *,
    mask: str,
    ignore: list[str],
    excludes: tuple[str, ...],
    max_file_bytes: int,
    listings: Path | None = None,
) -> ScanResult:
    """The files of `root` to index. `listings`: the cache file of this tree's folder listings
    (ingest/listings.py), used and updated by a walk (a tree without git)."""
    result = ScanResult()
    files = iter_scan(
        root,
        mask=mask,
        ignore=ignore,
        excludes=excludes,
        max_file_bytes=max_file_bytes,
        skipped=result.skipped,
        listings=listings,
    )
    result.files = list(files)
    return result


def iter_scan(
    root: Path,
    *,
    mask: str,
    ignore: list[str],
    excludes: tuple[str, ...],
    max_file_bytes: int,
    skipped: Counter[str],
    listings: Path | None = None,
) -> Iterator[ScannedFile]:
    """`scan`'s files one at a time (what it leaves out counted in `skipped`)."""
    rules = IgnoreRules(root, mask=mask, ignore=ignore, excludes=excludes)
    real_root = root.resolve()
    inside: dict[str, bool] = {}  # per folder: its real path lies inside the root

    def folder_inside(rel_dir: str) -> bool:
        if rel_dir not in inside:
            inside[rel_dir] = (root / rel_dir).resolve().is_relative_to(real_root)
        return inside[rel_dir]

    listed = _git_candidates(root, skipped)
    walked = listed is None
    base = os.path.join(root, "")  # a string ending in the separator: joined to by `+`
    records = Listings(listings, rules_key(root, mask, ignore, excludes)) if walked and listings else None
    candidates: Iterable[tuple[str, os.DirEntry[str] | None]] = (
        _walk_candidates(root, rules, skipped, records)  # excluded ones already left out
        if listed is None
        else ((rel, None) for rel in listed if not rules.excluded(rel))
    )
    for rel, entry in candidates:
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:  # a name that is not UTF-8 cannot be stored or shown
            skipped["undecodable_name"] += 1
            continue
        # git lists tracked files under a linked folder; a walk never enters one
        if not walked and not folder_inside(rel.rpartition("/")[0]):
            skipped["symlink_outside_root"] += 1
            continue
        try:  # one call for most files: a link alone needs more
            stat = entry.stat(follow_symlinks=False) if entry else os.lstat(base + rel)
            if S_ISLNK(stat.st_mode):
                full = base + rel
                try:
                    target = Path(full).resolve(strict=True)
                except (OSError, RuntimeError):
                    skipped["broken_symlink"] += 1
                    continue
                if not target.is_relative_to(real_root):
                    skipped["symlink_outside_root"] += 1
                    continue
                stat = os.stat(full)
        except FileNotFoundError:
            continue  # tracked by git but deleted in the working tree
        except (OSError, RuntimeError):
            skipped["unreadable"] += 1
            continue
        if not S_ISREG(stat.st_mode):
            continue
        if stat.st_size > byte_cap(rel, max_file_bytes):
            skipped["too_large"] += 1
            continue
        yield ScannedFile(rel, stat.st_size, stat.st_mtime_ns)
