"""Agents' SQLite databases, read without disturbing the agent (OpenCode, Cursor).

The agent may have its database open and writing while we read. So: a read-only
URI (``mode=ro``), a short busy timeout, and every query fetched whole at once, so
no read transaction outlives one call and the agent's writers and checkpoints never
wait on us. A WAL database whose ``-shm`` file is absent (the agent is not running)
is opened ``immutable``: a read-only connection would otherwise create ``-wal`` and
``-shm`` files beside it and leave them there. Errors become ``SourceError`` (one
source fails, the others go on); their text names the database, never its content.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from convodex.errors import SourceError
from convodex.sources.base import FileStat
from convodex.sqlite import SOURCE_BUSY_TIMEOUT_MS, sqlite3

_HEADER = b"SQLite format 3\x00"
# Bytes 18 and 19 of the header are the read and write format versions: 2 is WAL.
_WAL_VERSIONS = b"\x02\x02"


def companion(path: Path, suffix: str) -> Path:
    """``<db>-wal`` or ``<db>-shm``."""
    return path.with_name(path.name + suffix)


def is_wal(path: Path) -> bool:
    with open(path, "rb") as handle:
        head = handle.read(20)
    if not head.startswith(_HEADER):
        raise SourceError(str(path), "not a SQLite database")
    return head[18:20] == _WAL_VERSIONS


def connect(path: Path) -> sqlite3.Connection:
    """A read-only connection that creates, locks and waits for nothing it can avoid."""
    uri = path.absolute().as_uri()
    if is_wal(path) and not companion(path, "-shm").exists():
        uri += "?immutable=1"
    else:
        uri += "?mode=ro"
    db = sqlite3.connect(
        uri, uri=True, timeout=SOURCE_BUSY_TIMEOUT_MS / 1000, check_same_thread=False
    )
    db.row_factory = sqlite3.Row
    return db


@contextlib.contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """An open read-only connection; SQLite errors (busy, locked, corrupt) fail the source."""
    try:
        db = connect(path)
    except sqlite3.Error as exc:
        raise SourceError(str(path), "cannot open the database read-only") from exc
    try:
        yield db
    except sqlite3.Error as exc:
        raise SourceError(str(path), f"database read failed ({type(exc).__name__})") from exc
    finally:
        db.close()


def rows(db: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
    """Every row of one query, fetched at once: the read transaction ends here."""
    return db.execute(sql, params).fetchall()


def column(row: sqlite3.Row, name: str) -> Any:
    """A column that older schemas may lack (``None`` then)."""
    return row[name] if name in row.keys() else None


def stat(path: Path) -> FileStat:
    """The database and its ``-wal`` together: a commit changes one or the other."""
    st = os.stat(path)
    size, mtime = st.st_size, st.st_mtime_ns
    with contextlib.suppress(OSError):
        wal = os.stat(companion(path, "-wal"))
        size += wal.st_size
        mtime = max(mtime, wal.st_mtime_ns)
    return FileStat(size, mtime, st.st_ino)
