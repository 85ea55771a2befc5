"""The one rule for a long pass's progress bar (indexing, distilling, static and deep embedding,
counting words, copying to PostgreSQL): drawn by tqdm on stderr when the caller asks for it, and,
when it does not say, only while stderr is a terminal, so a daemon's log, a pipe or a test never
receives bar frames.

Drawn or not, every pass's count is kept per thread (`live`): the daemon's /health reports the
pass its writer thread is in (indexing: files done of total; embedding: chunks), so a client
waiting minutes for a first index can say how far it is, and the embedding rate gives an estimate
of when deep vectors will be there."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sized
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tqdm import tqdm

T = TypeVar("T")


def shown(asked: bool | None) -> bool:
    """True or False as asked; None: whether stderr is a terminal."""
    return sys.stderr.isatty() if asked is None else asked


@dataclass
class Pass:
    """One long pass's count, readable from another thread (ints: no lock needed to read)."""

    step: str
    unit: str
    total: int
    done: int = 0
    started: float = field(default_factory=time.monotonic)

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "unit": self.unit, "done": self.done, "total": self.total,
                "seconds": round(time.monotonic() - self.started, 3)}


# thread id -> the passes open in it, innermost last (distilling runs inside the static pass)
_LIVE: dict[int, list[Pass]] = {}


def live(thread_id: int | None) -> Pass | None:
    """The innermost pass open in that thread now, if any (read from another thread: the pass
    may close between the look and the read)."""
    passes = _LIVE.get(thread_id) if thread_id is not None else None
    try:
        return passes[-1] if passes else None
    except IndexError:
        return None


def _opened(step: str, unit: str, total: int) -> Pass:
    counted = Pass(step, unit, total)
    _LIVE.setdefault(threading.get_ident(), []).append(counted)
    return counted


def _closed(counted: Pass) -> None:
    passes = _LIVE.get(threading.get_ident(), [])
    if counted in passes:
        passes.remove(counted)
    if not passes:
        _LIVE.pop(threading.get_ident(), None)


class _CountedBar(tqdm):  # type: ignore[type-arg]  # tqdm is not subscriptable at run time
    """A tqdm bar that keeps its count in `live` even when disabled (a disabled tqdm counts nothing)."""

    def __init__(self, counted: Pass, **kwargs: Any):
        self.counted = counted
        super().__init__(**kwargs)

    def update(self, n: float | None = 1) -> bool | None:
        self.counted.done += int(n or 0)
        return super().update(n)

    def close(self) -> None:
        _closed(self.counted)
        super().close()


def progress_bar(desc: str, unit: str, asked: bool | None, *, total: int) -> tqdm[Any]:
    """A bar of TOTAL steps on stderr, disabled (drawing nothing) where `shown(asked)` is False."""
    bar: tqdm[Any] = _CountedBar(_opened(desc, unit, total), total=total, desc=desc, unit=unit,
                                 disable=not shown(asked), file=sys.stderr)
    return bar


def progress_over(items: Iterable[T], desc: str, unit: str, asked: bool | None, *,
                  leave: bool = True) -> Iterator[T]:
    """ITEMS, counted on a bar as they are taken (the same rule as progress_bar), and in `live`."""
    total = len(items) if isinstance(items, Sized) else 0
    counted = _opened(desc, unit, total)
    try:
        for item in tqdm(items, desc=desc, unit=unit, disable=not shown(asked), file=sys.stderr, leave=leave):
            yield item
            counted.done += 1
    finally:
        _closed(counted)
