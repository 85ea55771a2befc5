"""Folder listings kept between walks of a tree without git, so a no-change update lists and
matches only the folders that changed.

A folder's entries change only with its mtime (an entry created, removed or renamed in it sets it),
so a folder whose mtime is the one recorded has the same entries, and the files and subfolders the
scan's rules took from them are taken from the record instead of listed and matched again. The
mtime alone can be put back (os.utime; `rsync -a`, `cp -a`, `tar x` restore folder mtimes), so a
record also holds the folder's ctime, which only the kernel sets (every utime moves it), and its
inode: a folder replaced by another (a rename, a re-pointed link to the root) is listed again
whatever its mtime (git's stat rule, `core.trustctime`). What a
record does NOT stand for: the files' contents (an edit in place changes no folder's mtime), so the
scan still stats every file; and rules, so a record is used only under the ones it was made with
(its key: the mask, excludes and ignore patterns, and the text of every .gitignore from the root
down to the folder, each read again on every walk). A folder changed less than `RACY_NS` before it
was listed is not recorded: an entry added in the same timestamp tick after the listing would leave
its mtime as recorded (git's "racily clean" entries, the same rule). That assumes the machine's
clock and the file system's timestamps agree within `RACY_NS`: true of a local disk; a network
share whose server clock runs behind by more could hide an entry added in the tick of a listing
until the folder changes again.

The records live in a cache file per collection (0600, replaced whole); a missing, old or damaged
file only means the folders are listed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from qmd_daemon.atomic_files import replace_file

LISTINGS_FORMAT = 3  # raise when what a scan takes from a listing changes (3: a deeper negation wins)
RACY_NS = 3_000_000_000  # coarser than any file system's mtime tick (FAT: 2 s)


@dataclass(frozen=True)
class Listing:
    mtime_ns: int  # the folder's, read before it was listed
    ctime_ns: int  # the folder's: moves with every mtime change, utime's included
    inode: int  # the folder's: another folder put in its place has another
    key: str  # the rules it was filtered with (`chain_key`)
    gitignore: bool  # the folder holds a .gitignore
    files: tuple[str, ...]  # names of the files the rules took, in name order
    folders: tuple[str, ...]  # names of the subfolders the rules enter, in name order


def folder_stamp(folder: Listing | os.stat_result) -> tuple[int, int, int]:
    """What must be unchanged for a folder's record to stand for it: mtime, ctime and inode."""
    if isinstance(folder, Listing):
        return folder.mtime_ns, folder.ctime_ns, folder.inode
    return folder.st_mtime_ns, folder.st_ctime_ns, folder.st_ino


def listings_file(cache_dir: Path, collection: str, kind: str = "folders") -> Path:
    """Where a collection's cache of `kind` is kept: its tree's folder listings, or its skipped
    files (ingest/skipped_files.py). Deleting one costs a walk, or a read of the skipped files."""
    return cache_dir / "listings" / f"{_digest(collection)}.{kind}.json"


def rules_key(root: Path, mask: str, ignore: list[str], excludes: tuple[str, ...]) -> str:
    """The key of a walk's own rules, which every folder's key extends."""
    return _digest(repr((LISTINGS_FORMAT, str(root), mask, tuple(ignore), tuple(excludes))))


def chain_key(above: str, gitignore_text: str | None) -> str:
    """A folder's key: the key of the folder above (or the walk's) and its own .gitignore."""
    return above if gitignore_text is None else _digest(f"{above}\0{gitignore_text}")


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


class Listings:
    """The records of one tree: those read from `path`, and those this walk made or confirmed,
    which `save` writes back (only the folders this walk reached, so deleted ones are dropped)."""

    def __init__(self, path: Path, key: str):
        self.path, self.key = path, key
        self._old = self._load()
        self._new: dict[str, Listing] = {}

    def _load(self) -> dict[str, Listing]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if raw.get("key") != self.key:
                return {}
            folders = raw["folders"].items()
            return {rel: Listing(m, c, i, k, g, tuple(f), tuple(d)) for rel, (m, c, i, k, g, f, d) in folders}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return {}

    def recorded(self, rel_dir: str, folder: os.stat_result) -> Listing | None:
        """The record of `rel_dir` when the folder's stamp (`folder_stamp`) is the recorded one
        (its key the walk checks)."""
        record = self._old.get(rel_dir)
        return record if record is not None and folder_stamp(record) == folder_stamp(folder) else None

    def keep(self, rel_dir: str, record: Listing) -> None:
        """`record` still stands for `rel_dir` (checked by the walk)."""
        self._new[rel_dir] = record

    def record(self, rel_dir: str, listing: Listing, listed_at_ns: int) -> None:
        """A fresh listing of `rel_dir`, listed at `listed_at_ns` (the clock before the listing)."""
        if listing.mtime_ns < listed_at_ns - RACY_NS:
            self._new[rel_dir] = listing

    def save(self) -> None:
        """Write the records when they changed (a folder listed anew, or no longer reached)."""
        if self._new == self._old:
            return
        folders = {
            rel: [r.mtime_ns, r.ctime_ns, r.inode, r.key, r.gitignore, r.files, r.folders]
            for rel, r in self._new.items()
        }
        write_cache(self.path, {"key": self.key, "folders": folders})


def write_cache(path: Path, data: object) -> None:
    """Replace the cache file `path` (0600, in a 0700 folder) with `data` as JSON; a cache, so an
    update never fails for it (a reader finds the old file, the new one, or none)."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_file(path, json.dumps(data, separators=(",", ":")))
