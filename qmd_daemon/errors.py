"""User-facing errors: each one is printed as a single line and ends the command non-zero."""


class QmdError(Exception):
    """An error whose message is meant for the user, not a traceback."""

    exit_code = 1


class ConfigError(QmdError):
    """index.yml cannot be read or would be written wrongly."""


class IndexDatabaseError(QmdError):
    """The SQLite index is missing, corrupt, or from a newer schema."""


class UsageError(QmdError):
    """A command was given arguments it cannot act on (missing path, unknown collection)."""

    exit_code = 2


class UnknownCollectionError(UsageError):
    """A collection name that is not registered (the daemon answers it with 404)."""


class QueryRejected(QmdError):
    """A keyword query the store backend cannot run (nothing to match, only exclusions)."""
