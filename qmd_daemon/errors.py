"""User-facing errors: each one is printed as a single line and ends the command non-zero.

Each type carries how every front end reports it: `exit_code` for the CLI, `http_status` and
`code` for the daemon's JSON answer (and the in-process fallback's). Front ends read these from
the type, never from the message text, so rewording a message cannot change a status.
"""

from typing import Any


def os_error_line(exc: OSError) -> str:
    """An OSError as the one line the CLI and the daemon print: `Permission denied: PATH`."""
    return f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")


def internal_line(exc: Exception) -> str:
    """An error no type above maps, as the daemon's 500 and the in-process search's body say it:
    an OSError as the CLI prints one (`Is a directory: PATH`, not `IsADirectoryError: [Errno 21]
    Is a directory: 'PATH'`), anything else with its type (a bug: the type helps find it)."""
    return os_error_line(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"


class QmdError(Exception):
    """An error whose message is meant for the user, not a traceback."""

    exit_code = 1
    http_status = 500
    code = "engine_error"

    def as_dict(self) -> dict[str, Any]:
        """The JSON error body the daemon and the in-process fallback answer with."""
        return {"error": {"code": self.code, "message": str(self)}}


class ConfigError(QmdError):
    """index.yml cannot be read or would be written wrongly, or asks for what cannot be done
    (a collection set aside for its mask, a backend without its server or package). The user's
    own configuration, not a fault of the daemon: 409 (the request conflicts with it), never a
    500 that reads as a bug."""

    http_status = 409
    code = "config_error"


class IndexDatabaseError(QmdError):
    """The SQLite index is missing, corrupt, or from a newer schema."""

    http_status = 503
    code = "index_error"


class QueryRejected(QmdError):
    """A keyword query the index backend cannot run (e.g. one FTS5's syntax refuses): it matches
    nothing; the search goes on with its other lists."""


class UsageError(QmdError):
    """A command was given arguments it cannot act on (missing path, unknown collection)."""

    exit_code = 2
    http_status = 400
    code = "bad_request"


class PathPatternError(UsageError):
    """A --path pattern (or `path:` word) that is no gitignore pattern."""


class UnknownCollectionError(UsageError):
    """A collection name that is not registered (the daemon answers it with 404)."""

    http_status = 404
    code = "not_found"

    @classmethod
    def named(cls, name: str) -> "UnknownCollectionError":
        """The one line for `name` wherever it is asked for: the CLI, the daemon (ai-search's
        answer lacked the hint the in-process search gave) and the MCP server."""
        return cls(f"no collection named '{name}' (see `qmd-daemon collection list`)")


class RequestError(UsageError):
    """A request the daemon refuses as asked (a bad field, a folder or job that is not there),
    with the status and code chosen where it is raised."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.http_status = status
        self.code = code
