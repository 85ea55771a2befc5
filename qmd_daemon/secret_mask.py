"""A PostgreSQL password never reaches what a user or an agent reads: one mask for every place.

The mask hides, as `***`, every password this process has been told of (`remember`: each URL
read from index.yml's `database_url:` or QMD_DATABASE_URL, every URL a connection is made with),
however spelled (as written, percent-decoded, unescaped), and any password by its shape: a libpq
keyword (`password=secret`, `password = 'two words'`), a URL's query parameter
(`?password=secret&...`) or a URL's user info (`scheme://user:secret@host`). The shape rule is
what keeps a password the process never read out (index.yml edited while the daemon runs, a
server's message quoting another connection string: dblink, postgres_fdw).

Every secret ever remembered stays masked: a URL changed under a running daemon leaves both the
old and the new password in messages for a while. Once the first URL is remembered, every log
record of this process is masked as it is made (a log record factory: every logger, every handler,
ones a library adds later (the MCP SDK's) and Python's last-resort stderr handler included; a
traceback is formatted and masked right then, since it prints each error of a chain as the driver
wrote it). A process that never reads a URL (a local SQLite index) logs as before.

Standard library only: the daemon, the CLI, the engine and the store all import it.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import unquote

# A password anywhere in a text, as either form of a connection string writes it.
PASSWORD_KEYWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&#'\"]+)", re.IGNORECASE)
URL_USERINFO = re.compile(r"(://[^/:@\s]*:)[^@\s/]+@")

_known: set[str] = set()
_urls: set[str] = set()  # the URLs remembered already
_lock = threading.Lock()
_factory_installed = False
_read_a_url = False  # set by `remember`, also for a URL without a password (the shape rules apply)


def raw_passwords(url: str) -> Iterator[str]:
    """The password as URL spells it, decoded and unescaped, without parsing it as libpq would
    (a URL it refuses is quoted by its parse error all the same)."""
    if "://" in url:
        userinfo = url.split("://", 1)[1].split("/", 1)[0].rpartition("@")[0]
    else:  # `user:secret@host/db` without its scheme: the word before the last `@`
        userinfo = (url.rpartition("@")[0].split() or [""])[-1]
    found = [userinfo.partition(":")[2]]
    found += [m.group(2).strip("'") for m in PASSWORD_KEYWORD.finditer(url)]
    for raw in found:
        yield raw
        yield unquote(raw)
        yield raw.replace("\\'", "'").replace("\\\\", "\\")


def remember(url: str, *more_secrets: str) -> None:
    """Mask URL's password (and MORE_SECRETS: spellings a parser found) from now on, in `mask`
    and in every log record of this process."""
    global _read_a_url
    if url in _urls and not more_secrets:  # the engine asks on every use of its backend
        return
    secrets = {s for s in (*raw_passwords(url), *more_secrets) if s}
    with _lock:
        _known.update(secrets)
        _urls.add(url)
        _read_a_url = True
    _mask_log_records()


def active() -> bool:
    """Whether a database URL has been read by this process (the mask then works by shape too)."""
    return _read_a_url


def mask(text: str, extra: Iterable[str] = ()) -> str:
    """TEXT with every remembered password (and EXTRA ones) as `***`, then any other password a
    connection string in it spells. Without a remembered URL and EXTRA, TEXT as it is (a local
    index has no password; a log line quoting code with `password=` stays readable)."""
    with _lock:
        secrets = _known | {s for s in extra if s}
        read = _read_a_url
    if not secrets and not read:
        return text
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    text = URL_USERINFO.sub(r"\1***@", text)
    return PASSWORD_KEYWORD.sub(r"\1***", text)


def mask_json(value: Any) -> Any:
    """VALUE (decoded JSON: dicts, lists, strings ...) with `mask` applied to every string in it."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {key: mask_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [mask_json(item) for item in value]
    return value


def _mask_log_records() -> None:
    """Wrap the log record factory once: each record leaves it with message, traceback and stack
    masked, so no handler (added now or later) can print the password."""
    global _factory_installed
    with _lock:
        if _factory_installed:
            return
        _factory_installed = True
    made = logging.getLogRecordFactory()

    def masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = made(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - arguments that do not fit, a __str__ that raises:
            # the handler's format reports it (handleError) as it did before the mask; raised
            # here, it would come out of the caller's `log.warning(...)` line itself
            _mask_unformatted(record)
            return record
        masked = mask(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[0] is not None:
            # formatted here, masked, and the live exception dropped: a handler that renders
            # exc_info itself (rich's tracebacks) would print the driver's error whole
            record.exc_text = mask(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = mask(record.stack_info)
        return record

    logging.setLogRecordFactory(masked_record)


def _mask_unformatted(record: logging.LogRecord) -> None:
    """A record whose message cannot be formatted: logging's report of it (handleError) prints
    its format and the repr of its arguments (`log.warning("no server at", url)` quotes the URL
    whole), so both are masked; arguments that hold no password are left as they are."""
    if isinstance(record.msg, str):
        record.msg = mask(record.msg)
    try:
        shown = repr(record.args)
    except Exception:  # noqa: BLE001 - a __repr__ that raises: logging reports that one too
        return
    masked = mask(shown)
    if masked != shown:
        record.args = (masked,)
