"""Which files of a collection root are indexed, with their size and mtime.

Inside git, git itself decides what is ignored (`ls-files --cached --others --exclude-standard`);
elsewhere the tree is walked and its .gitignore files applied with pathspec. Symlinks never lead
outside the root, and directory symlinks are not followed (no loops).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from qmd_daemon.errors import UsageError

_BRACE = re.compile(r"\{([^{}]*)\}")


def expand_braces(pattern: str) -> list[str]:
    """`**/*.{md,py}` -> `**/*.md`, `**/*.py` (glob brace syntax, which gitwildmatch lacks)."""
    match = _BRACE.search(pattern)
    if not match:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    out: list[str] = []
    for option in match.group(1).split(","):
        out.extend(expand_braces(head + option + tail))
    return out


def compile_patterns(lines: list[str], what: str) -> pathspec.PathSpec:
    try:
        return pathspec.PathSpec.from_lines("gitignore", lines)
    except ValueError as exc:
        raise UsageError(f"invalid {what} pattern: {exc}") from None


def compile_mask(pattern: str) -> pathspec.PathSpec:
    lines = [p for part in pattern.split(";") for p in expand_braces(part.strip()) if p]
    return compile_patterns(lines, "mask")


@dataclass(frozen=True)
class ScannedFile:
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


def _git_candidates(root: Path) -> list[str] | None:
    if find_git_root(root) is None:
        return None
    try:
        proc = subprocess.run(
            # core.fsmonitor in the repository's .git/config could name a program to run: never.
            ["git", "-c", "core.fsmonitor=false", "-C", str(root), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"],
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    return sorted({n for n in names if n})


def _walk_candidates(root: Path, skipped: Counter[str]) -> list[str]:
    """Walk without following directory links, applying each folder's .gitignore below it."""
    out: list[str] = []
    specs: list[tuple[str, pathspec.PathSpec]] = []

    def ignored(rel: str, is_dir: bool) -> bool:
        for base, spec in specs:
            if base and not rel.startswith(base + "/"):
                continue
            local = rel[len(base) + 1 :] if base else rel
            if spec.match_file(local + ("/" if is_dir else "")):
                return True
        return False

    def unreadable(_error: OSError) -> None:
        skipped["unreadable_dir"] += 1

    for current, dirs, files in os.walk(root, followlinks=False, onerror=unreadable):
        rel_dir = os.path.relpath(current, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        specs = [(b, s) for b, s in specs if not b or rel_dir == b or rel_dir.startswith(b + "/")]
        gitignore = Path(current) / ".gitignore"
        if gitignore.is_file():
            try:
                lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
                specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
            except OSError:
                skipped["unreadable"] += 1
        prefix = f"{rel_dir}/" if rel_dir else ""
        dirs[:] = sorted(d for d in dirs if d != ".git" and not ignored(prefix + d, True))
        out.extend(prefix + f for f in sorted(files) if not ignored(prefix + f, False))
    return out


def scan(
    root: Path,
    *,
    mask: str,
    ignore: list[str],
    excludes: tuple[str, ...],
    max_file_bytes: int,
) -> ScanResult:
    result = ScanResult()
    mask_spec = compile_mask(mask)
    exclude_spec = compile_patterns([*excludes, *ignore], "ignore")
    real_root = root.resolve()
    candidates = _git_candidates(root)
    if candidates is None:
        candidates = _walk_candidates(root, result.skipped)
    for rel in candidates:
        if not mask_spec.match_file(rel) or exclude_spec.match_file(rel):
            continue
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:  # a name that is not UTF-8 cannot be stored or shown
            result.skipped["undecodable_name"] += 1
            continue
        full = root / rel
        try:
            if full.is_symlink():
                try:
                    target = full.resolve(strict=True)
                except (OSError, RuntimeError):
                    result.skipped["broken_symlink"] += 1
                    continue
                if not target.is_relative_to(real_root):
                    result.skipped["symlink_outside_root"] += 1
                    continue
            stat = full.stat()
        except FileNotFoundError:
            continue  # tracked by git but deleted in the working tree
        except (OSError, RuntimeError):
            result.skipped["unreadable"] += 1
            continue
        if not os.path.isfile(full):
            continue
        if stat.st_size > max_file_bytes:
            result.skipped["too_large"] += 1
            continue
        result.files.append(ScannedFile(rel, stat.st_size, stat.st_mtime_ns))
    return result
