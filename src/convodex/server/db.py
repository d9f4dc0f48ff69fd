"""Opening the server database and running its numbered migrations.

One small interface over SQLite and PostgreSQL: a :class:`Database` hands out
transactions (:meth:`Database.write`, :meth:`Database.snapshot`) as :class:`Tx`
objects whose SQL uses ``?`` placeholders on both dialects. What differs between
the dialects lives in ``convodex.server.dialects``; :mod:`convodex.server.connect`
opens one (this module never imports a dialect, so neither imports the other).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any, Protocol

from convodex.errors import ServerError
from convodex.server.matching import LikeGroup
from convodex.sqlite import marks
from convodex.text.query import Node

Row = tuple[Any, ...]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class DatabaseUnavailable(ServerError):
    """The database is busy, locked or unreachable: retry later (HTTP 503).

    Drivers' own errors are translated into this one, so callers (and the HTTP
    layer) never need to import a driver to tell "try again" from a bug.
    """


class Cursor(Protocol):
    """The DB-API cursor subset both drivers share."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, query: Any, params: Any = ..., /) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def executemany(self, query: Any, params_seq: Any, /) -> Any: ...


class Dialect(ABC):
    """SQL and value conversions that differ between SQLite and PostgreSQL."""

    name: str
    #: appended to a SELECT that must lock the session row for the transaction
    for_update: str = ""
    #: appended to a subquery the planner must evaluate on its own, before the query
    #: around it (SQLite already does)
    fence: str = ""
    #: searches worth running at once: more only contend for the cores (and, when the
    #: search runs in this process, the GIL) and slow the writes down
    concurrent_searches: int = 4

    def sql(self, text: str) -> str:
        """Translate ``?`` placeholders to the driver's style."""
        return text

    @abstractmethod
    def ts_param(self, micros: int) -> object:
        """A timestamp (microseconds since the epoch, UTC) as the driver stores it."""

    @abstractmethod
    def ts_value(self, value: Any) -> int:
        """A stored timestamp back as microseconds since the epoch."""

    def text_source(self, use_index: bool) -> str:
        """The FROM clause that yields candidate entries as ``e`` for
        :meth:`text_match`; its parameters come first in :meth:`text_params`."""
        return "entries e"

    @abstractmethod
    def text_match(self, use_index: bool) -> str:
        """A predicate: the projected ``e.text`` contains the query (case-insensitive).
        ``use_index=False`` asks for a plain scan of the rows the other conditions allow."""

    @abstractmethod
    def text_params(self, query: str, use_index: bool) -> list[object]:
        """Parameters for :meth:`text_source` and :meth:`text_match`, in that order."""

    #: the expression that writes an entry's ranked tokens from :meth:`tokens_param`
    tokens_sql: str = "?"
    #: the FROM clause of a ranked search (yields ``e``) and its match; what each
    #: candidate carries to its score (as ``ranked``); the score of a candidate ``c``
    #: (higher is better), which takes ``ranked_score_params`` copies of the expression
    ranked_from: str = "entries e"
    ranked_where: str = ""
    ranked_carry: str = "NULL"
    ranked_score: str = ""
    ranked_score_params: int = 0
    #: whether a ranked search reads a window of the scope's newest entries first
    ranked_windows: bool = False

    def ranked_candidates(self, windowed: bool) -> tuple[str, str]:
        """The FROM clause and match of a ranked candidate read (one expression
        parameter in all); ``windowed`` when a range of the scope's newest entries
        bounds it."""
        return self.ranked_from, self.ranked_where

    def intersected(self, tx: Tx) -> AbstractContextManager[None]:
        """Around a windowed ranked read: what this database's planner needs to
        intersect the full-text index with the window's range, not walk either."""
        return nullcontext()

    def tokens_param(self, tokens: list[str] | None) -> object:
        """An entry's indexed tokens (``None``: no search row) as the column stores them."""
        return None if tokens is None else " ".join(tokens)

    @abstractmethod
    def ranked_expression(self, tree: Node) -> str:
        """The L12 match tree as this database's full-text query text."""

    def insert_rows(
        self, cursor: Cursor, table: str, columns: Sequence[str], rows: Sequence[Row]
    ) -> None:
        """Insert ``rows`` (values in ``columns`` order; names are the code's own, never
        a caller's): one statement per row, batched by the driver."""
        statement = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks(columns)})"
        cursor.executemany(self.sql(statement), rows)

    def ordered_walk(self, tx: Tx) -> AbstractContextManager[None]:
        """Around a query that walks an owner's or a team's newest-first index: what this
        database's planner needs to walk that index, not another with the same order."""
        return nullcontext()

    @abstractmethod
    def raw_match(self, column: str, group: LikeGroup) -> tuple[str, list[object]]:
        """A predicate and its parameters: ``column`` (raw JSON) matches any of the
        group's ``LIKE`` patterns (escaped with ``\\``), folding ASCII case only."""


class Tx:
    """One transaction: run ``?``-parameterized SQL and fetch rows."""

    def __init__(self, dialect: Dialect, cursor: Cursor) -> None:
        self.dialect = dialect
        self._cursor = cursor

    def run(self, sql: str, params: Sequence[object] = ()) -> int:
        self._cursor.execute(self.dialect.sql(sql), tuple(params))
        return int(self._cursor.rowcount)

    def one(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        self._cursor.execute(self.dialect.sql(sql), tuple(params))
        row = self._cursor.fetchone()
        return None if row is None else tuple(row)

    def all(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        self._cursor.execute(self.dialect.sql(sql), tuple(params))
        return [tuple(row) for row in self._cursor.fetchall()]

    def many(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        """Run one statement for each row of parameters (batched by the driver)."""
        if rows:
            self._cursor.executemany(self.dialect.sql(sql), [tuple(r) for r in rows])

    def insert(self, table: str, columns: Sequence[str], rows: Sequence[Row]) -> None:
        """Insert many rows at once, the fastest way the dialect has (COPY on PostgreSQL)."""
        if rows:
            self.dialect.insert_rows(self._cursor, table, columns, rows)

    def ts(self, micros: int) -> object:
        return self.dialect.ts_param(micros)


class Database(ABC):
    """A server database: a dialect plus a source of connections (no globals)."""

    dialect: Dialect
    url: str

    @abstractmethod
    def write(self) -> AbstractContextManager[Tx]:
        """A read-write transaction; commits on success, rolls back on error."""

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[Tx]:
        """A read-only transaction whose reads all see one committed state."""

    @abstractmethod
    def _apply_migration(self, version: int, name: str, script: str) -> None:
        """Run one migration script and record it, atomically."""

    @abstractmethod
    def close(self) -> None:
        """Close every connection this object opened."""

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def applied_migrations(self) -> list[int]:
        with self.write() as tx:
            tx.run(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
            )
            return [int(r[0]) for r in tx.all("SELECT version FROM schema_migrations ORDER BY 1")]

    def migrate(self) -> list[int]:
        """Apply the migrations not yet recorded, in order; return the versions applied."""
        known = available_migrations(self.dialect.name)
        applied = set(self.applied_migrations())
        newest_known = max(known, default=0)
        if applied and max(applied) > newest_known:
            raise ServerError(
                f"database schema version {max(applied)} is newer than this build "
                f"understands ({newest_known})"
            )
        done: list[int] = []
        for version, (name, script) in sorted(known.items()):
            if version in applied:
                continue
            self._apply_migration(version, name, script)
            done.append(version)
        return done


def available_migrations(dialect: str) -> dict[int, tuple[str, str]]:
    """``{version: (file name, script)}`` for one dialect's migration directory."""
    found: dict[int, tuple[str, str]] = {}
    folder = resources.files("convodex.server.migrations").joinpath(dialect)
    for item in folder.iterdir():
        match = _MIGRATION_NAME.match(item.name)
        if match:
            found[int(match.group(1))] = (item.name, item.read_text(encoding="utf-8"))
    return found


def now_micros() -> int:
    return (datetime.now(UTC) - EPOCH) // timedelta(microseconds=1)


def micros_to_iso(micros: int) -> str:
    """``2026-01-01T00:00:00.000000Z``: the ``ts`` of a hit."""
    moment = EPOCH + timedelta(microseconds=micros)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
