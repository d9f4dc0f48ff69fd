"""convodex: search every conversation people and AI agents have had.

The public API is imported lazily (PEP 562), so ``import convodex`` and the CLI's
start-up stay cheap: a name loads its module on first use.
"""

from __future__ import annotations

import importlib

# Not ``from typing import TYPE_CHECKING``: typing costs a short command's start-up
# a tenth of its time (the warm path's client imports this package first).
TYPE_CHECKING = False

__version__ = "0.1.0"

if TYPE_CHECKING:
    from typing import Any

    from convodex.catalog.plan import SearchRequest
    from convodex.catalog.service import HistoryService
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

_EXPORTS = {
    "AccessDenied": "convodex.errors",
    "Budget": "convodex.sources.base",
    "CatalogError": "convodex.errors",
    "ConvodexError": "convodex.errors",
    "HistoryService": "convodex.catalog.service",
    "InvalidInput": "convodex.errors",
    "NotFound": "convodex.errors",
    "QueryError": "convodex.errors",
    "SearchRequest": "convodex.catalog.plan",
    "SessionReplayLimitError": "convodex.errors",
    "SourceError": "convodex.errors",
    "Unauthorized": "convodex.errors",
}

__all__ = [
    "AccessDenied",
    "Budget",
    "CatalogError",
    "ConvodexError",
    "HistoryService",
    "InvalidInput",
    "NotFound",
    "QueryError",
    "SearchRequest",
    "SessionReplayLimitError",
    "SourceError",
    "Unauthorized",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'convodex' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
