"""qmd_daemon/progress.py: the one rule every long pass follows for its bar (stderr a terminal,
or asked), checked on a real pseudo-terminal and a plain buffer."""

import fcntl
import io
import os
import select
import struct
import sys
import termios
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from qmd_daemon.progress import progress_bar, progress_over, shown


@contextmanager
def _terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """stderr on the slave side of a pty; yields the master's descriptor to read what was drawn.
    (Set inside the test: pytest puts its own capture back on sys.stderr between setup and call.)"""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # tqdm fits a bar to its width
    with os.fdopen(slave, "w", encoding="utf-8") as stream:
        monkeypatch.setattr(sys, "stderr", stream)
        try:
            yield master
        finally:
            monkeypatch.undo()
            os.close(master)


def _drawn(master: int) -> str:
    out = b""
    while select.select([master], [], [], 0.2)[0]:
        out += os.read(master, 65536)
    return out.decode("utf-8", "replace")


def _pass(bar: Any) -> None:
    """What a pass does with its bar: count steps, then close it."""
    with bar:
        bar.update(3)


def test_a_terminal_gets_a_bar_unless_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    with _terminal(monkeypatch) as terminal:
        assert shown(None) and not shown(False)
        _pass(progress_bar("embedding", "chunk", None, total=3))
        assert "embedding" in _drawn(terminal)
        list(progress_over(range(3), "repo-x", "file", False))
        _pass(progress_bar("embedding", "chunk", False, total=3))
        assert _drawn(terminal) == ""


def test_a_log_or_pipe_gets_none_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()  # a daemon's log, a pipe: not a terminal
    monkeypatch.setattr(sys, "stderr", log)
    assert not shown(None) and shown(True)
    _pass(progress_bar("embedding", "chunk", None, total=3))
    list(progress_over(range(3), "repo-x", "file", None))
    assert log.getvalue() == ""
    list(progress_over(range(3), "repo-x", "file", True))
    assert "repo-x" in log.getvalue()


def test_every_pass_is_counted_in_live_drawn_or_not() -> None:
    """The daemon's /health reads the writer thread's pass (progress.live): a disabled tqdm counts
    nothing, so the count is kept beside it; the innermost open pass is the one shown."""
    import threading

    from qmd_daemon.progress import live

    me = threading.get_ident()
    assert live(me) is None
    with progress_bar("embedding", "chunk", False, total=40) as bar:
        bar.update(16)
        outer = live(me)
        assert outer is not None and (outer.step, outer.done, outer.total) == ("embedding", 16, 40)
        seen = []
        for _ in progress_over(["a.py", "b.py", "c.py"], "repo-x", "file", False):
            counted = live(me)
            assert counted is not None
            seen.append((counted.step, counted.done, counted.total))
        assert seen == [("repo-x", 0, 3), ("repo-x", 1, 3), ("repo-x", 2, 3)]
        assert live(me) is outer  # the inner pass closed: the outer one shows again
    assert live(me) is None
