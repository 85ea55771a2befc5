"""Which folders may become a collection, so that nobody indexes secrets or a whole disk by
accident (docs/security.md, "What the daemon reads").

Refused always: the filesystem root, the home folder and the folders above it, and the credential
folders of settings.CREDENTIAL_FOLDERS with everything in them. Inside the settings folders
(~/.config, ~/.local, $XDG_CONFIG_HOME) only a git repository's top level, added explicitly.
On demand (`ai-search` / `qmd-warm` in a folder nobody registered): only a git repository's top
level; anything else needs `qmd-daemon collection add`. A new collection also has to fit the file
count and size caps.
"""

from __future__ import annotations

import errno
import os
import time
from collections import Counter
from enum import Enum
from pathlib import Path

from qmd_daemon.errors import UsageError
from qmd_daemon.ingest.scan import find_git_root, iter_scan
from qmd_daemon.settings import CREDENTIAL_FOLDERS, SETTINGS_FOLDERS, Settings


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _settings_folders(home: Path) -> list[Path]:
    folders = [home / name for name in SETTINGS_FOLDERS]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        folders.append(Path(xdg))
    return [f.resolve() for f in folders]


class Missing(Enum):
    """Why a path `exists()` denies is not there; callers decide by the member, and its value is
    the words said after the path (so rewording a message never changes what a caller does)."""

    GONE = "does not exist"
    LINK_LOOP = "is a symlink loop (its links lead back to one another), not a folder"


def missing_reason(path: Path) -> Missing:
    """Why PATH, which `exists()` denies, is not there: a symlink loop exists() reports as absent."""
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Missing.LINK_LOOP
    return Missing.GONE


def check_readable(path: Path) -> None:
    """UsageError when this user cannot list the folder `path`: one line, said the same by an
    update, a registration and a search there (daemon or in-process). A folder that is gone is
    its caller's to report (moved or deleted?), not a permission error."""
    try:
        path.stat()
        readable = os.access(path, os.R_OK | os.X_OK)
    except PermissionError:  # a folder above it cannot be searched
        readable = False
    except OSError:  # gone, or no folder: said by the caller
        return
    if not readable:
        raise UsageError(f"cannot read {path} (permission denied), so nothing in it was read")


def check_root(path: Path, *, on_demand: bool) -> None:
    """UsageError when the resolved folder `path` may not become a collection; `on_demand`: it
    would be registered because a client searched there, not because the user added it."""
    # said first, not as a PermissionError from looking for its .git: that stopped an update of
    # every collection, and reached ai-search as the daemon's internal error
    check_readable(path)
    home = Path.home().resolve()
    if path == Path(path.anchor) or path == home or path in home.parents:
        raise UsageError(f"refusing to index {path} as a whole; add a repository or a folder inside it")
    for credentials in (home / name for name in CREDENTIAL_FOLDERS):
        if _inside(path, credentials.resolve()):
            raise UsageError(f"refusing to index {path}: {credentials} holds credentials")
    git_top = find_git_root(path) == path
    for folder in _settings_folders(home):
        if path == folder or (_inside(path, folder) and (on_demand or not git_top)):
            raise UsageError(
                f"refusing to index {path}: {folder} holds settings and tokens; only a git repository "
                f"inside it can be registered, by name: qmd-daemon collection add PATH"
            )
    if on_demand and not git_top:
        raise UsageError(
            f"{path} is not a git repository, so nothing was indexed; to search it, register it "
            f"first: qmd-daemon collection add {path}"
        )


# A refused root, remembered for a while: the daemon is asked again on every ai-search in it, and
# each ask would list the tree again on its one reader thread. Keyed by what decides the answer.
REFUSAL_MEMORY_S = 300.0
_refusals: dict[tuple[Path, str, tuple[str, ...], int, int, int], tuple[float, str]] = {}


def tally_to_cap(path: Path, settings: Settings, *, mask: str, ignore: list[str]) -> tuple[int, int]:
    """(files, bytes) a new collection at `path` would index, counted only until one cap is passed:
    past it the answer is known, and a 150k-file tree need not be listed to the end."""
    files_cap, bytes_cap = settings.max_collection_files, settings.max_collection_mb * 1024 * 1024
    files = total = 0
    found = iter_scan(path, mask=mask, ignore=ignore, excludes=settings.excludes,
                      max_file_bytes=settings.max_file_bytes, skipped=Counter())  # fmt: skip
    for scanned in found:
        files += 1
        total += scanned.size
        if (files_cap and files > files_cap) or (bytes_cap and total > bytes_cap):
            break
    return files, total


def check_size(path: Path, settings: Settings, *, mask: str, ignore: list[str]) -> None:
    """UsageError when a new collection at `path` would index more files or bytes than the caps
    allow, with the override in the message (the tree listed until a cap is passed, no file is
    read). A refusal is remembered for REFUSAL_MEMORY_S, so asking again answers at once."""
    files_cap, mb_cap = settings.max_collection_files, settings.max_collection_mb
    if not files_cap and not mb_cap:
        return
    key = (path, mask, tuple(ignore), files_cap, mb_cap, settings.max_file_bytes)
    now = time.monotonic()
    remembered = _refusals.get(key)
    if remembered is not None and now - remembered[0] < REFUSAL_MEMORY_S:
        raise UsageError(remembered[1])
    files, total = tally_to_cap(path, settings, mask=mask, ignore=ignore)
    if files_cap and files > files_cap:
        knob, over = "QMD_MAX_COLLECTION_FILES", f"over {files_cap:,} files to index (the cap)"
    elif mb_cap and total > mb_cap * 1024 * 1024:
        knob, over = "QMD_MAX_COLLECTION_MB", f"over {mb_cap:,} MB to index (the cap)"
    else:
        return
    refusal = (
        f"refusing to index {path}: {over}; narrow it (--mask, --ignore) or lift the cap: "
        f"{knob}=0 qmd-daemon collection add {path}"
    )
    for stale in [k for k, (when, _) in _refusals.items() if now - when >= REFUSAL_MEMORY_S]:
        del _refusals[stale]
    _refusals[key] = (now, refusal)
    raise UsageError(refusal)
