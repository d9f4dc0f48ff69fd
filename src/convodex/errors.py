"""One small exception tree. Errors that can reach HTTP carry a ``status``.

Messages never include user content (queries, message text, tool arguments):
they name files, resources and numbers only, so they are safe to log.
"""

from __future__ import annotations


class ConvodexError(Exception):
    """Base of every error convodex raises on purpose."""

    status: int = 500


class InvalidInput(ConvodexError):
    """Input that cannot be used as given; the caller can fix it."""

    status = 400


class ConfigError(InvalidInput, ValueError):
    """A setting (an environment variable or an argument) has a value that cannot be used."""


class QueryError(InvalidInput):
    """The caller's query, kind, limit or cursor cannot be used."""


class SourceError(ConvodexError):
    """An authoritative source could not be read; other sources are unaffected."""

    status = 422

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class SessionReplayLimitError(SourceError):
    """A replay budget (L6) was exceeded; the session files were left unchanged."""

    def __init__(self, path: str, resource: str, observed: int, limit: int) -> None:
        self.resource = resource
        self.observed = observed
        self.limit = limit
        super().__init__(
            path,
            f"{resource} is {observed} bytes, over the limit of {limit} bytes; "
            "the session files were left unchanged",
        )


class CatalogError(ConvodexError):
    """The catalog database cannot be opened or used."""

    status = 503


class ServerError(ConvodexError):
    """The conversation server's database cannot be opened or used (SPEC S5).

    Its own class, not the local catalog's: the two halves fail independently, and a
    caller of one never has to catch the other's errors.
    """

    status = 503


class AccessDenied(ConvodexError):
    """The caller may not see or change this resource."""

    status = 403


class Unauthorized(ConvodexError):
    """No valid credentials were presented."""

    status = 401


class NotFound(ConvodexError):
    """The named session, entry or account does not exist."""

    status = 404


class Conflict(ConvodexError):
    """The change collides with existing state (an id or name already taken)."""

    status = 409
