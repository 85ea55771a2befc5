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

import os
from pathlib import Path

from qmd_daemon.errors import UsageError
from qmd_daemon.ingest.scan import find_git_root, scan
from qmd_daemon.settings import CREDENTIAL_FOLDERS, SETTINGS_FOLDERS, Settings


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _settings_folders(home: Path) -> list[Path]:
    folders = [home / name for name in SETTINGS_FOLDERS]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        folders.append(Path(xdg))
    return [f.resolve() for f in folders]


def check_root(path: Path, *, on_demand: bool) -> None:
    """UsageError when the resolved folder `path` may not become a collection; `on_demand`: it
    would be registered because a client searched there, not because the user added it."""
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


def check_size(path: Path, settings: Settings, *, mask: str, ignore: list[str]) -> None:
    """UsageError when a new collection at `path` would index more files or bytes than the caps
    allow, with the override in the message (one listing of the tree, no file is read)."""
    files_cap, mb_cap = settings.max_collection_files, settings.max_collection_mb
    if not files_cap and not mb_cap:
        return
    found = scan(path, mask=mask, ignore=ignore, excludes=settings.excludes,
                 max_file_bytes=settings.max_file_bytes).files
    total_mb = sum(f.size for f in found) / (1024 * 1024)
    if files_cap and len(found) > files_cap:
        knob = "QMD_MAX_COLLECTION_FILES"
        over = f"{len(found):,} files to index, over the cap of {files_cap:,}"
    elif mb_cap and total_mb > mb_cap:
        knob = "QMD_MAX_COLLECTION_MB"
        over = f"{total_mb:,.0f} MB to index, over the cap of {mb_cap:,} MB"
    else:
        return
    raise UsageError(
        f"refusing to index {path}: {over}; narrow it (--mask, --ignore) or lift the cap: "
        f"{knob}=0 qmd-daemon collection add {path}"
    )
