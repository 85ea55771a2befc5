"""The one rule for a long pass's progress bar (indexing, distilling, static and deep embedding,
counting words, copying to PostgreSQL): drawn by tqdm on stderr when the caller asks for it, and,
when it does not say, only while stderr is a terminal, so a daemon's log, a pipe or a test never
receives bar frames."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TypeVar

from tqdm import tqdm

T = TypeVar("T")


def shown(asked: bool | None) -> bool:
    """True or False as asked; None: whether stderr is a terminal."""
    return sys.stderr.isatty() if asked is None else asked


def progress_bar(desc: str, unit: str, asked: bool | None, *, total: int) -> tqdm[Any]:
    """A bar of TOTAL steps on stderr, disabled (drawing nothing) where `shown(asked)` is False."""
    return tqdm(total=total, desc=desc, unit=unit, disable=not shown(asked), file=sys.stderr)


def progress_over(items: Iterable[T], desc: str, unit: str, asked: bool | None, *,
                  leave: bool = True) -> tqdm[T]:
    """ITEMS, counted on a bar as they are taken (the same rule as progress_bar)."""
    return tqdm(items, desc=desc, unit=unit, disable=not shown(asked), file=sys.stderr, leave=leave)
