"""Source files' bytes as text, the way editors read them: UTF-8 without its BOM, UTF-16 when a
BOM says so (ripgrep reads those too), and the Windows-1252 of older European sources. Decoding every
file as UTF-8 with replacement put U+FEFF into first lines, turned `café` into `caf\ufffd` (so
the word could not be found), and skipped UTF-16 files as binary (their ASCII holds NUL bytes).
Files are read with `read_inside`: nothing outside a collection's root, whatever links say."""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

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


# Never blocks on a FIFO (O_NONBLOCK: the open returns, the regular-file check refuses it).
_OPEN_FLAGS = os.O_RDONLY | sum(getattr(os, flag, 0) for flag in ("O_BINARY", "O_NONBLOCK", "O_CLOEXEC"))


class OutsideRoot(OSError):
    """The path leads out of its collection's root: a symlinked folder or file, maybe swapped in
    after the scan (a repository's `gh/` replaced by a link to ~/.config/gh)."""


class TooLarge(OSError):
    """The file is over the size cap when read, whatever the scan's stat said: it grew, or another
    file was swapped in, between the scan and the read."""


def _opened_path(fd: int, path: Path) -> Path:
    """Where the file open on `fd` really is. Linux: the kernel's answer for the descriptor
    itself. Elsewhere: `path` resolved after the open, taken only if it is the very file opened."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
    real = Path(os.path.realpath(path))
    if not os.path.samestat(os.stat(real), os.fstat(fd)):
        raise OutsideRoot(f"{path} changed while being opened")
    return real


def read_inside(root: Path, rel: str, max_bytes: int) -> bytes:
    """The bytes of the regular file `root/rel`, refused (OutsideRoot) unless the file opened lies
    inside `root` (a resolved path). Checked on the open descriptor, not on the path before the
    open, so a link swapped in between a check and the read cannot lead out. At most `max_bytes`
    are read (TooLarge past them): the scan's size is only what the file was then."""
    path = root / rel
    fd = os.open(path, _OPEN_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        if not _opened_path(fd, path).is_relative_to(root):
            raise OutsideRoot(f"{rel} leads outside {root}")
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise TooLarge(f"{rel} is over {max_bytes} bytes")
        return data
    finally:
        os.close(fd)
