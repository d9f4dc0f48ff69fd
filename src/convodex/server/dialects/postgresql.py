"""PostgreSQL: pg_trgm GIN index, psycopg 3 with a connection pool."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from convodex.server.db import EPOCH, Database, Dialect, Tx, like_escape, now_micros


class PostgresDialect(Dialect):
    name = "postgresql"
    for_update = " FOR UPDATE"

    def sql(self, text: str) -> str:
        # The shared SQL never contains a literal %, so this translation is exact.
        return text.replace("?", "%s")

    def ts_param(self, micros: int) -> object:
        return EPOCH + timedelta(microseconds=micros)

    def ts_value(self, value: Any) -> int:
        if not isinstance(value, datetime):
            raise TypeError("expected a timestamp")
        return (value - EPOCH) // timedelta(microseconds=1)

    def text_candidates(self, use_index: bool) -> tuple[str, str]:
        # ILIKE folds case by the database's LC_CTYPE (Unicode under a UTF-8 locale).
        if not use_index:
            # ``text || ''`` is not the indexed expression: the planner must use the
            # owner or range scan it was asked for, whatever it estimates for pg_trgm.
            return ("search_rows r", "(r.text || '') ILIKE ? ESCAPE '\\'")
        return ("search_rows r", "r.text ILIKE ? ESCAPE '\\'")

    def text_params(self, query: str, use_index: bool) -> list[object]:
        return ["%" + like_escape(query) + "%"]

    def raw_match(self, column: str) -> str:
        # Under the C collation ILIKE lower-cases ASCII letters only.
        return f"{column} COLLATE \"C\" ILIKE ? ESCAPE '\\'"


class PostgresDatabase(Database):
    """A PostgreSQL database reached through a psycopg connection pool."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.dialect = PostgresDialect()
        self.url = url
        self.pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            open=True,
            name="convodex-server",
        )

    @contextmanager
    def write(self) -> Iterator[Tx]:
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield Tx(self.dialect, cur)

    @contextmanager
    def snapshot(self) -> Iterator[Tx]:
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield Tx(self.dialect, cur)

    def _apply_migration(self, version: int, name: str, script: str) -> None:
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            # Two servers starting at once must not both apply the same migration.
            cur.execute("SELECT pg_advisory_xact_lock(hashtext('convodex.migrate'))")
            cur.execute("SELECT 1 FROM schema_migrations WHERE version = %s", (version,))
            if cur.fetchone() is None:
                cur.execute(script.encode("utf-8"))
                cur.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                    (version, name, now_micros()),
                )

    def close(self) -> None:
        self.pool.close()
