"""Opening the catalog (SPEC L8): private files, WAL, recorded migrations.

The catalog is a disposable projection; nothing in it is authoritative.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from convodex import config
from convodex.catalog.migrations import MIGRATIONS
from convodex.errors import CatalogError
from convodex.sqlite import SQLITE_VERSION, sqlite3
from convodex.text.tokens import TOKENIZER_VERSION

Mode = Literal["disk", "memory", "degraded"]
SCHEMA_VERSION = len(MIGRATIONS)
MIN_SQLITE = (3, 43, 0)  # FTS5 contentless_delete


@dataclass
class Catalog:
    """An open catalog connection and how it was opened."""

    db: sqlite3.Connection
    path: Path | None
    mode: Mode
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def writable(self) -> bool:
        return self.mode != "degraded"

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; rolls back on any error."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM catalog_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def revision(self) -> int:
        value = self.meta("revision")
        return int(value) if value else 0

    def bump_revision(self, db: sqlite3.Connection) -> int:
        """Advance the revision inside the caller's transaction; cursors of older ones go stale."""
        row = db.execute(
            "INSERT INTO catalog_meta(key, value) VALUES ('revision', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 "
            "RETURNING value"
        ).fetchone()
        return int(row[0])


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)


def _private_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        candidate = Path(f"{path}{suffix}")
        if candidate.exists():
            with contextlib.suppress(OSError):
                os.chmod(candidate, 0o600)


def connect(target: str) -> sqlite3.Connection:
    if SQLITE_VERSION < MIN_SQLITE:
        raise CatalogError(
            f"SQLite {'.'.join(map(str, SQLITE_VERSION))} is too old for the catalog; "
            "install pysqlite3-binary or a Python built with SQLite >= 3.43"
        )
    db = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
    db.execute(f"PRAGMA busy_timeout = {int(config.BUSY_TIMEOUT_MS)}")
    db.execute("PRAGMA foreign_keys = ON")
    return db


def migrate(db: sqlite3.Connection) -> None:
    """Apply the migrations not yet recorded, each in its own transaction."""
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at INTEGER)")
    applied = {row[0] for row in db.execute("SELECT name FROM _migrations")}
    for number, fn in enumerate(MIGRATIONS, start=1):
        if fn.__name__ in applied:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            fn(db)
            db.execute(
                "INSERT INTO _migrations(name, applied_at) VALUES (?, unixepoch('subsec') * 1000)",
                (fn.__name__,),
            )
            db.execute(f"PRAGMA user_version = {int(number)}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    _check_tokenizer(db)


def _check_tokenizer(db: sqlite3.Connection) -> None:
    """A different stored tokenizer version wipes the projection and queues every source."""
    row = db.execute("SELECT value FROM catalog_meta WHERE key = 'tokenizer_version'").fetchone()
    if row is not None and int(row[0]) == TOKENIZER_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if row is not None:
            db.execute("DELETE FROM documents")
            db.execute("DELETE FROM outputs")
            db.execute("DELETE FROM message_spans")
            db.execute(
                "UPDATE sources SET pending = 1, byte_offset = 0, message_count = 0, "
                "signature = NULL"
            )
        db.execute(
            "INSERT INTO catalog_meta(key, value) VALUES ('tokenizer_version', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(TOKENIZER_VERSION),),
        )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def open_catalog(cache_dir: str | os.PathLike[str] | None = None) -> Catalog:
    """Open (creating if needed) the catalog under the cache root."""
    path = config.catalog_path(cache_dir)
    try:
        _private_dir(path.parent)
        old_umask = os.umask(0o077)
        try:
            db = connect(str(path))
            db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # takes effect on a new file only
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            migrate(db)
        finally:
            os.umask(old_umask)
    except sqlite3.Error as exc:
        raise CatalogError(f"cannot open the catalog at {path}: {type(exc).__name__}") from exc
    except OSError as exc:
        raise CatalogError(f"cannot open the catalog at {path}: {exc.strerror}") from exc
    _private_files(path)
    return Catalog(db, path, "disk")


def open_memory_catalog() -> Catalog:
    db = connect(":memory:")
    migrate(db)
    return Catalog(db, None, "memory")
