"""SQLite: the embedded default (WAL, FTS5 trigram index)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from convodex.errors import CatalogError
from convodex.server.db import Database, Dialect, Tx, now_micros
from convodex.sqlite import sqlite3

BUSY_TIMEOUT_MS = 5000


def _contains(text: object, needle: object) -> int:
    """Case-insensitive literal containment with Unicode case folding.

    SQLite's ``LIKE`` folds ASCII only, so the trigram candidates (which FTS5 folds
    fully) are confirmed with the same rule the snippet uses.
    """
    if not isinstance(text, str) or not isinstance(needle, str):
        return 0
    return int(needle.lower() in text.lower())


def fts_phrase(query: str) -> str:
    """``query`` as one FTS5 string: every character literal."""
    return '"' + query.replace('"', '""') + '"'


class SQLiteDialect(Dialect):
    name = "sqlite"

    def __init__(self, *, trigram_index: bool = True) -> None:
        # False scans search_rows instead of the FTS5 table: the benchmark's baseline.
        self.trigram_index = trigram_index

    def ts_param(self, micros: int) -> object:
        return micros

    def ts_value(self, value: Any) -> int:
        return int(value)

    def text_candidates(self, use_index: bool) -> tuple[str, str]:
        if not (use_index and self.trigram_index):
            return ("search_rows r", "convodex_contains(r.text, ?)")
        return (
            "search_fts JOIN search_rows r ON r.row_id = search_fts.rowid",
            "search_fts MATCH ? AND convodex_contains(r.text, ?)",
        )

    def text_params(self, query: str, use_index: bool) -> list[object]:
        if not (use_index and self.trigram_index):
            return [query]
        return [fts_phrase(query), query]

    def raw_match(self, column: str) -> str:
        return f"{column} LIKE ? ESCAPE '\\'"


class SQLiteDatabase(Database):
    """A SQLite file with a small pool of connections (one per concurrent caller)."""

    def __init__(self, path: Path, *, max_idle: int = 8) -> None:
        self.dialect = SQLiteDialect()
        self.path = path
        self.url = f"sqlite:///{path}"
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._max_idle = max_idle
        self._closed = False
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not path.exists():
                fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
        except OSError as exc:
            raise CatalogError(f"cannot create the database file {path}: {exc.strerror}") from exc

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(self.path),
            isolation_level=None,
            check_same_thread=False,
            timeout=BUSY_TIMEOUT_MS / 1000,
        )
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.create_function("convodex_contains", 2, _contains, deterministic=True)
        return conn

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise CatalogError("the database is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect()
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.rollback()
            with self._lock:
                keep = not self._closed and len(self._idle) < self._max_idle
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    @contextmanager
    def write(self) -> Iterator[Tx]:
        with self._connection() as conn:
            # IMMEDIATE takes the write lock up front: no upgrade deadlocks between writers.
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield Tx(self.dialect, conn.cursor())
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[Tx]:
        with self._connection() as conn:
            conn.execute("PRAGMA query_only = ON")
            try:
                # In WAL mode a read transaction sees one committed state throughout.
                conn.execute("BEGIN")
                try:
                    yield Tx(self.dialect, conn.cursor())
                finally:
                    conn.execute("ROLLBACK")
            finally:
                conn.execute("PRAGMA query_only = OFF")

    def _apply_migration(self, version: int, name: str, script: str) -> None:
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = ?", (version,)
                ).fetchone()
                if row is None:
                    for statement in _statements(script):
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name, applied_at)"
                        " VALUES (?, ?, ?)",
                        (version, name, now_micros()),
                    )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _statements(script: str) -> Iterator[str]:
    """Split a migration script into complete statements (triggers included)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not pending.strip():
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                yield pending.strip()
            pending = ""
    if pending.strip():
        raise CatalogError("a migration script ends with an incomplete statement")
