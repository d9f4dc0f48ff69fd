"""convodex: search every conversation people and AI agents have had."""

from convodex.errors import (
    AccessDenied,
    CatalogError,
    ConvodexError,
    InvalidInput,
    NotFound,
    QueryError,
    SessionReplayLimitError,
    SourceError,
    Unauthorized,
)

__all__ = [
    "AccessDenied",
    "CatalogError",
    "ConvodexError",
    "InvalidInput",
    "NotFound",
    "QueryError",
    "SessionReplayLimitError",
    "SourceError",
    "Unauthorized",
]
