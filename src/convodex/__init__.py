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
from convodex.sources.base import Budget

__all__ = [
    "AccessDenied",
    "Budget",
    "CatalogError",
    "ConvodexError",
    "InvalidInput",
    "NotFound",
    "QueryError",
    "SessionReplayLimitError",
    "SourceError",
    "Unauthorized",
]
