"""SQLite: the embedded default (WAL, FTS5 trigram index)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from convodex.errors import ServerError
from convodex.server.db import (
    Database,
    DatabaseUnavailable,
    Dialect,
    Tx,
    now_micros,
)
from convodex.server.matching import UNICODE_ESCAPE, LikeGroup, case_variants, like_escape
from convodex.sqlite import SERVER_BUSY_TIMEOUT_MS, sqlite3, transaction
from convodex.text.query import Node, match_expression

#: how long a write waits in this process's queue for the write connection
WRITE_QUEUE_TIMEOUT_S = 10.0


def glob_pattern(query: str) -> str:
    """A case-insensitive substring GLOB for ``query``: each character becomes the class
    of its case variants. SQLite's ``LIKE`` folds ASCII only; GLOB classes fold every
    script and still run in C (the shown-text check then confirms each candidate)."""
    parts = ["*"]
    for char in query:
        variants = sorted(case_variants(char))
        if len(variants) == 1 and variants[0] not in "*?[":
            parts.append(variants[0])
            continue
        # In a class "]" must come first, "^" must not, and "-" must come last.
        ordered = [c for c in variants if c == "]"]
        ordered += [c for c in variants if c not in "]^-"]
        ordered += [c for c in variants if c == "^"] + [c for c in variants if c == "-"]
        if ordered[0] == "^":
            ordered.append(ordered.pop(0))
        parts.append("[" + "".join(ordered) + "]")
    parts.append("*")
    return "".join(parts)


def like_prefilter(query: str) -> str:
    """A LIKE pattern that every text the GLOB accepts also matches, and that SQLite
    checks several times faster than GLOB classes: a character whose case variants
    are all ASCII is itself (LIKE folds ASCII case), any other is ``_``."""
    parts = []
    for char in query:
        plain = all(variant.isascii() for variant in case_variants(char))
        parts.append(like_escape(char) if plain else "_")
    return "%" + "".join(parts) + "%"


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

    def text_source(self, use_index: bool) -> str:
        if not (use_index and self.trigram_index):
            return "entries e"
        # The FTS5 matches, plus the newest rows it has not indexed yet (migration 0002
        # indexes them in batches); CROSS JOIN keeps SQLite driving from the index.
        return (
            "(SELECT rowid AS row_id FROM search_fts WHERE search_fts MATCH ?"
            " UNION ALL SELECT row_id FROM entries"
            " WHERE row_id > (SELECT indexed_through FROM search_fts_state)) c"
            " CROSS JOIN entries e ON e.row_id = c.row_id"
        )

    def text_match(self, use_index: bool) -> str:
        return "e.text LIKE ? ESCAPE '\\' AND e.text GLOB ?"

    def text_params(self, query: str, use_index: bool) -> list[object]:
        match: list[object] = [like_prefilter(query), glob_pattern(query)]
        if not (use_index and self.trigram_index):
            return match
        return [fts_phrase(query), *match]

    # FTS5 over the project's own tokens (L3), kept by triggers in the journal's
    # transaction (migration 0004); bm25 is lower for better matches.
    ranked_from = "ranked_fts CROSS JOIN entries e ON e.row_id = ranked_fts.rowid"
    ranked_where = "ranked_fts MATCH ?"
    ranked_carry = "-bm25(ranked_fts)"
    ranked_score = "c.ranked"

    def ranked_expression(self, tree: Node) -> str:
        return match_expression(tree)

    def raw_match(self, column: str, group: LikeGroup) -> tuple[str, list[object]]:
        # LIKE folds ASCII case only. Most payloads hold no \u escape at all, so the
        # escaped forms are tried only on those that do.
        def any_of(patterns: list[str]) -> str:
            return " OR ".join(f"{column} LIKE ? ESCAPE '\\'" for _ in patterns) or "FALSE"

        sql = f"({any_of(group.plain)}"
        params: list[object] = [*group.plain]
        if group.escaped:
            sql += f" OR (instr({column}, ?) > 0 AND ({any_of(group.escaped)}))"
            params += [UNICODE_ESCAPE, *group.escaped]
        return sql + ")", params


class SQLiteDatabase(Database):
    """A SQLite file: one write connection that writers queue for, and a small pool of
    read connections (WAL readers never wait for the writer).

    Writers queue on a Python lock instead of in SQLite's busy handler, which sleeps
    and retries: under many concurrent writers that polling both wastes time and,
    once the busy timeout runs out, fails the write. The busy timeout still covers
    other processes (a CLI command beside a running server).
    """

    def __init__(self, path: Path, *, max_idle: int = 32) -> None:
        self.dialect = SQLiteDialect()
        self.path = path
        self.url = f"sqlite:///{path}"
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._max_idle = max_idle
        self._closed = False
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not path.exists():
                fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
        except OSError as exc:
            raise ServerError(f"cannot create the database file {path}: {exc.strerror}") from exc

    def _connect(self, *, read_only: bool) -> sqlite3.Connection:
        with _translated():
            conn = sqlite3.connect(
                str(self.path),
                isolation_level=None,
                check_same_thread=False,
                timeout=SERVER_BUSY_TIMEOUT_MS / 1000,
            )
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(f"PRAGMA busy_timeout = {SERVER_BUSY_TIMEOUT_MS}")
            if read_only:
                conn.execute("PRAGMA query_only = ON")
        return conn

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise ServerError("the database is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect(read_only=True)
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
    def _write_connection(self) -> Iterator[sqlite3.Connection]:
        """The one write connection, held by one writer at a time (the others queue)."""
        if not self._write_lock.acquire(timeout=WRITE_QUEUE_TIMEOUT_S):
            raise DatabaseUnavailable("the database is busy: too many writes are queued")
        try:
            if self._closed:
                raise ServerError("the database is closed")
            if self._writer is None:
                self._writer = self._connect(read_only=False)
            yield self._writer
        finally:
            self._write_lock.release()

    @contextmanager
    def write(self) -> Iterator[Tx]:
        # IMMEDIATE takes the write lock up front: no upgrade deadlocks with other
        # processes, and a busy database fails there, before any work is done.
        with self._write_connection() as conn, _translated(), transaction(conn):
            yield Tx(self.dialect, conn.cursor())

    @contextmanager
    def snapshot(self) -> Iterator[Tx]:
        # In WAL mode a read transaction sees one committed state throughout.
        with self._reader() as conn, _translated(), transaction(conn, "BEGIN"):
            yield Tx(self.dialect, conn.cursor())

    def _apply_migration(self, version: int, name: str, script: str) -> None:
        with self.write() as tx:
            if tx.one("SELECT 1 FROM schema_migrations WHERE version = ?", (version,)) is None:
                for statement in _statements(script):
                    tx.run(statement)
                tx.run(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (version, name, now_micros()),
                )

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        with self._write_lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()


@contextmanager
def _translated() -> Iterator[None]:
    """SQLite's busy, locked and I/O errors as :class:`DatabaseUnavailable` (HTTP 503)."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        message = str(exc)
        busy = "locked" in message or "busy" in message
        reason = "busy" if busy else "unavailable"
        raise DatabaseUnavailable(f"the database is {reason}") from exc


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
        raise ServerError("a migration script ends with an incomplete statement")
