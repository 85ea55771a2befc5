"""Every change the setup makes goes through a Journal: printed, undoable, or only printed.

- `--dry-run`: each step prints `DRYRUN <what>` and nothing is touched.
- A failure midway undoes, newest first, what this run changed (files get their old bytes back,
  created files and folders go away), so a failed run leaves the machine as it found it.
- Test seam: `QMD_SETUP_FAIL_AFTER=<step id>` raises right after that step, to test rollback.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from qmd_daemon.settings import SetupSettings
from qmd_daemon.setup.state import write_atomic


class SetupError(Exception):
    """A step failed; the message is one line for the user."""


class Journal:
    def __init__(self, *, dry_run: bool = False, echo: Callable[[str], None] | None = None):
        self.dry_run = dry_run
        self.echo = echo or (lambda line: print(line, flush=True))
        self._undo: list[tuple[str, Callable[[], None]]] = []
        self.created_files: list[Path] = []
        self.created_dirs: list[Path] = []
        self.fail_after = SetupSettings.from_env().fail_after

    # -- reporting -----------------------------------------------------------------------------

    def step(self, step_id: str, what: str) -> bool:
        """Announce a step; False in a dry run (the caller must then change nothing)."""
        if self.dry_run:
            self.echo(f"DRYRUN {what}")
            return False
        self.echo(f"- {what}")
        return True

    def note(self, line: str) -> None:
        self.echo(f"  {line}")

    def done(self, step_id: str) -> None:
        """Mark a step finished; the fault-injection seam fires here."""
        if self.fail_after and step_id == self.fail_after:
            raise SetupError(f"injected failure after step {step_id!r} (QMD_SETUP_FAIL_AFTER)")

    def on_undo(self, label: str, undo: Callable[[], None]) -> None:
        self._undo.append((label, undo))

    # -- rollback ------------------------------------------------------------------------------

    def rollback(self) -> list[str]:
        """Undo everything this run did, newest first; returns the labels that could not be undone."""
        failed: list[str] = []
        while self._undo:
            label, undo = self._undo.pop()
            try:
                undo()
            except Exception as exc:  # keep undoing the rest
                failed.append(f"{label}: {exc}")
        return failed

    def keep(self, label: str) -> None:
        """Drop the undo of LABEL: what it made stays even if a later step fails (a venv whose
        llama-cpp-python took minutes to build is worth more to the retry than a clean slate)."""
        self._undo = [(lb, undo) for lb, undo in self._undo if lb != label]

    def commit(self) -> None:
        self._undo.clear()

    # -- file helpers (each one undoable) ------------------------------------------------------

    def ensure_dir(self, path: Path) -> None:
        """mkdir -p, remembering each folder this run created (undo removes them if empty)."""
        missing: list[Path] = []
        probe = path
        while not probe.exists():
            missing.append(probe)
            if probe.parent == probe:
                break
            probe = probe.parent
        for folder in reversed(missing):
            folder.mkdir()
            self.created_dirs.append(folder)
            self.on_undo(f"mkdir {folder}", functools.partial(_rmdir_if_empty, folder))

    def write_file(self, path: Path, text: str, *, mode: int | None = None) -> bool:
        """Write `text` (atomically) unless the file already holds it; True when it changed."""
        old: bytes | None
        try:
            old = path.read_bytes()
        except FileNotFoundError:
            old = None
        if old is not None and old == text.encode("utf-8"):
            if mode is not None and (path.stat().st_mode & 0o777) != mode:
                os.chmod(path, mode)
            return False
        self.ensure_dir(path.parent)
        write_atomic(path, text, mode)
        if old is None:
            self.created_files.append(path)
        self.on_undo(f"write {path}", lambda: _restore(path, old))
        return True

    def remove_file(self, path: Path) -> bool:
        try:
            old = path.read_bytes()
        except FileNotFoundError:
            return False
        mode = path.stat().st_mode & 0o777
        path.unlink()

        def put_back() -> None:
            _restore(path, old)
            os.chmod(path, mode)

        self.on_undo(f"remove {path}", put_back)
        return True

    def created_tree(self, path: Path) -> None:
        """Register a folder this run created wholesale (a venv): undo removes the whole tree."""
        self.created_dirs.append(path)
        self.on_undo(f"create {path}", lambda: shutil.rmtree(path, ignore_errors=True))


def _restore(path: Path, old: bytes | None) -> None:
    if old is None:
        path.unlink(missing_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(old)


def _rmdir_if_empty(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()

