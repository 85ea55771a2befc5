"""read_varint: SQLite's varint, as its file format document defines it (the encoding FTS5 uses for
its averages record: store/fts_totals.py). The record itself is checked against a count of the
chunks table on a real index in test_chunks_in.py."""

from __future__ import annotations

import pytest

from qmd_daemon.store.fts_totals import read_varint


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b"\x00", 0),
        (b"\x7f\xff", 127),  # one byte: what follows is not read
        (b"\x81\x00", 128),
        (b"\x9e\xdc\x53\x01", 503_379),  # the bench home's row total, then a column's total
        (b"\xff" * 8 + b"\x01", (2**56 - 1) << 8 | 1),  # the ninth byte counts all 8 of its bits
        (b"\xff" * 9, 2**64 - 1),
    ],
)
def test_read_varint(data: bytes, value: int) -> None:
    assert read_varint(data) == value
