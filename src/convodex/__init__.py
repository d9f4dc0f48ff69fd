"""convodex: search every conversation people and AI agents have had."""

from convodex.errors import (
    AccessDenied,
    CatalogError,
    ConvodexError,
    NotFound,
    QueryError,
    SessionReplayLimitError,
    SourceError,
    StaleCursorError,
    Unauthorized,
)

__all__ = [
    "AccessDenied",
    "CatalogError",
    "ConvodexError",
    "NotFound",
    "QueryError",
    "SessionReplayLimitError",
    "SourceError",
    "StaleCursorError",
    "Unauthorized",
]
