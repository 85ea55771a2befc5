"""daemon.log never holds the index database's password.

Every PostgreSQL error is raised as one masked line (store/postgres/connection.py `redacted`), but
`from` the driver's error, and the code above checks that cause's type (llm_cache, schema, homes),
so it stays. A traceback logged with it (`log.exception` of a job or a request that failed some
other way while handling one, asyncio's unhandled task errors, aiohttp's) prints each error of the
chain as the driver wrote it, a server's message quoting a connection string included. So the
daemon's log handlers mask whatever they write: the message, the traceback and the stack.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from qmd_daemon.settings import Settings
from qmd_daemon.store.backends import password_mask


class MaskingFilter(logging.Filter):
    """A handler filter that passes every record with `mask` applied to what it will print."""

    def __init__(self, mask: Callable[[str], str]):
        super().__init__()
        self.mask = mask

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # arguments that do not fit: logging reports it itself
            return True
        masked = self.mask(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:  # what Formatter.format prints, made here
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.mask(record.exc_text)
        if record.stack_info:
            record.stack_info = self.mask(record.stack_info)
        return True


def mask_daemon_log(settings: Settings) -> None:
    """Put the filter on every handler of the root logger (the daemon's stderr, daemon.log when
    detached): records of every logger reach them, asyncio's and aiohttp's too."""
    mask = password_mask(settings)
    if mask is None:
        return
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, MaskingFilter) for f in handler.filters):
            handler.addFilter(MaskingFilter(mask))
