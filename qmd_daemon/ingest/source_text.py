"""Source files' bytes as text, the way editors read them: UTF-8 without its BOM, UTF-16 when a
BOM says so (ripgrep reads those too), and the Windows-1252 of older European sources. Decoding every
file as UTF-8 with replacement put U+FEFF into first lines, turned `café` into `caf\ufffd` (so
the word could not be found), and skipped UTF-16 files as binary (their ASCII holds NUL bytes)."""

from __future__ import annotations

import codecs

_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_ASCII = bytes(range(128))


def utf8_bytes(data: bytes) -> bytes:
    """DATA, with a UTF-16 file (BOM first) transcoded to UTF-8; anything else as it is."""
    if data.startswith(_UTF16_BOMS):
        return data.decode("utf-16", "replace").encode("utf-8")
    return data


def decode_source(data: bytes) -> str:
    """The text of a file's bytes. Not UTF-8: when most of its non-ASCII bytes fail as UTF-8 it is
    read as Windows-1252 (latin-1's superset); a UTF-8 file with a few bad bytes stays UTF-8. Other
    legacy encodings (cp1251, GBK, Shift-JIS) come out as Windows-1252 look-alikes: no worse for
    search than U+FFFD, and guessing them per file would cost a detector's time on every read."""
    data = utf8_bytes(data).removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
    non_ascii = len(data.translate(None, _ASCII))  # the ASCII bytes deleted
    if text.count("\ufffd") * 2 > non_ascii:
        return data.decode("cp1252", "replace")
    return text
