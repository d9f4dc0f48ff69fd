"""The SQLite driver both systems use, and their one transaction helper.

The catalog needs FTS5 ``contentless_delete`` (SQLite ≥ 3.43) so a rewritten
source's rows can be deleted without keeping its text; many Pythons ship an
older SQLite, so the bundled pysqlite3 build is preferred when installed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sized
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import sqlite3
else:
    try:
        from pysqlite3 import dbapi2 as sqlite3
    except ImportError:  # pragma: no cover - depends on the platform's wheels
        import sqlite3

__all__ = [
    "sqlite3",
    "SQLITE_VERSION",
    "CATALOG_BUSY_TIMEOUT_MS",
    "SOURCE_BUSY_TIMEOUT_MS",
    "SERVER_BUSY_TIMEOUT_MS",
    "bound_runs",
    "is_busy",
    "transaction",
]

SQLITE_VERSION: tuple[int, ...] = tuple(int(p) for p in sqlite3.sqlite_version.split("."))
# Values one statement binds at most where a list is expanded into ``IN (?, …)`` or
# ``VALUES``: far below SQLite's limit (32,766), a page's worth at a time.
BOUND_RUN = 500

# How long a statement waits for another connection's write lock, one per kind of
# database, named here so the three differences are deliberate and seen together:
#: the local catalog: in WAL mode readers never wait for the indexer, so only a
#: second writer waits, briefly, and then reports "busy" rather than stall a search
CATALOG_BUSY_TIMEOUT_MS = 250
#: an agent's own live database, read only: wait a moment for the agent's commit,
#: never long enough to hold up a scan of every other source
SOURCE_BUSY_TIMEOUT_MS = 1000
#: the team server's database: several server processes write the same file, so a
#: write waits out another process's commit rather than fail a client's sync
SERVER_BUSY_TIMEOUT_MS = 5000

T = TypeVar("T")


def marks(values: Sized) -> str:
    """``?, ?, …``: one bound parameter a value, the inside of an ``IN (…)``."""
    return ", ".join("?" * len(values))


def bound_runs(values: list[T], size: int = BOUND_RUN) -> Iterator[list[T]]:
    """``values`` in runs of at most ``size``, each bound by one statement."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def is_busy(exc: BaseException) -> bool:
    """ "Database is locked" is contention, never corruption."""
    code = str(getattr(exc, "sqlite_errorname", "") or "")
    text = str(exc).lower()
    return code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or (
        "database is locked" in text or "database table is locked" in text
    )


@contextlib.contextmanager
def transaction(
    db: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE", wait_seconds: float = 0.0
) -> Iterator[sqlite3.Connection]:
    """One explicit transaction on an autocommit connection; rolls back on any error.

    ``begin`` is ``BEGIN IMMEDIATE`` for writers (the write lock is taken up front, so
    a busy database fails here, before any work) or ``BEGIN`` for a read snapshot.
    Another connection's write is waited out for up to ``wait_seconds`` (beyond the
    driver's own busy timeout), then the busy error is raised.
    """
    deadline = time.monotonic() + wait_seconds
    pause = 0.01
    while True:
        try:
            db.execute(begin)
            break
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        # SQLite may have rolled back already (a full disk, an I/O error, a failed
        # COMMIT): a second ROLLBACK would raise and hide the error that matters.
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise
