"""The SQLite driver both systems use.

The catalog needs FTS5 ``contentless_delete`` (SQLite ≥ 3.43) so a rewritten
source's rows can be deleted without keeping its text; many Pythons ship an
older SQLite, so the bundled pysqlite3 build is preferred when installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3
else:
    try:
        from pysqlite3 import dbapi2 as sqlite3
    except ImportError:  # pragma: no cover - depends on the platform's wheels
        import sqlite3

__all__ = ["sqlite3", "SQLITE_VERSION"]

SQLITE_VERSION: tuple[int, ...] = tuple(int(p) for p in sqlite3.sqlite_version.split("."))
