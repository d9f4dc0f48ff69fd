"""PostgreSQL: pg_trgm GIN index, psycopg 3 with a connection pool."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, cast

import psycopg
from psycopg import sql
from psycopg.errors import LockNotAvailable, TransactionRollback, UniqueViolation
from psycopg_pool import ConnectionPool, PoolTimeout

from convodex.server.db import (
    EPOCH,
    Cursor,
    Database,
    DatabaseUnavailable,
    Dialect,
    Row,
    Tx,
    now_micros,
)
from convodex.server.matching import (
    UNICODE_ESCAPE,
    LikeGroup,
    ascii_lower,
    case_variants,
    like_escape,
)
from convodex.text.query import Node, Not, Or, Term
from convodex.text.tokens import TAIL_MARK

#: how long a statement waits for a lock another transaction holds
LOCK_TIMEOUT_MS = 5000
#: the largest token position a tsvector records
MAX_POSITION = 16383


#: ``':N`` for every position, to close a quoted lexeme and give its place
_POSITIONS = [f"':{n}" for n in range(1, MAX_POSITION + 1)]


def _lexeme(token: str) -> str:
    """One token as a quoted tsvector/tsquery lexeme (no normalization applied)."""
    if "'" in token or "\\" in token:
        token = token.replace("\\", "\\\\").replace("'", "''")
    return "'" + token + "'"


def tsquery(tree: Node) -> str:
    """The L12 match tree as tsquery text, term for term as :func:`match_expression`
    gives it to FTS5: words AND, phrases ``<->``, prefixes ``:*``, one CJK character as
    the bigrams it starts or ends."""
    if isinstance(tree, Term):
        if tree.kind == "cjk1":
            ch = tree.tokens[0]
            return f"({_lexeme(ch)}:* | {_lexeme(TAIL_MARK + ch)})"
        if tree.kind == "prefix":
            return _lexeme(tree.tokens[0]) + ":*"
        joiner = " <-> " if tree.kind == "phrase" else " & "
        return "(" + joiner.join(_lexeme(t) for t in tree.tokens) + ")"
    if isinstance(tree, Or):
        return "(" + " | ".join(tsquery(i) for i in tree.items) + ")"
    if isinstance(tree, Not):
        return "!" + tsquery(tree.item)
    positives = [tsquery(i) for i in tree.items if not isinstance(i, Not)]
    negatives = ["!" + tsquery(i.item) for i in tree.items if isinstance(i, Not)]
    return "(" + " & ".join(positives + negatives) + ")"


def folded_prefilter(query: str) -> str:
    """A LIKE pattern, for text whose ASCII letters are lower-cased (``lower`` under the
    C collation), that every text ``ILIKE '%query%'`` accepts also matches: a character
    without case variants is itself, one whose variants are all ASCII letters is its
    lower case, any other is ``_`` (one character, whatever it is)."""
    parts = []
    for char in query:
        variants = case_variants(char)
        if variants == {char} and char.lower() == char == char.upper():
            parts.append(like_escape(char))
        elif all(variant.isascii() for variant in variants):
            parts.append(like_escape(ascii_lower(char)))
        else:
            parts.append("_")
    return "%" + "".join(parts) + "%"


class PostgresDialect(Dialect):
    name = "postgresql"
    for_update = " FOR UPDATE"
    fence = " OFFSET 0"
    # A search mostly waits for the database server, not for this process.
    concurrent_searches = 8

    def sql(self, text: str) -> str:
        # The shared SQL never contains a literal %, so this translation is exact.
        return text.replace("?", "%s")

    def ts_param(self, micros: int) -> object:
        return EPOCH + timedelta(microseconds=micros)

    def ts_value(self, value: Any) -> int:
        if not isinstance(value, datetime):
            raise TypeError("expected a timestamp")
        return (value - EPOCH) // timedelta(microseconds=1)

    def text_match(self, use_index: bool) -> str:
        # ILIKE folds case by the database's LC_CTYPE (Unicode under a UTF-8 locale).
        if not use_index:
            # A scan checks every row it reads. ILIKE lower-cases each text character by
            # character through the locale (~10 us a row); the ASCII-only fold of the C
            # collation first, with a pattern every ILIKE match also matches, leaves
            # ILIKE only the rows that may match. ``text || ''`` is not the indexed
            # expression: the planner must use the owner or range scan it was asked
            # for, whatever it estimates for pg_trgm.
            return "lower(e.text COLLATE \"C\") LIKE ? AND (e.text || '') ILIKE ?"
        return "e.text ILIKE ?"

    def text_params(self, query: str, use_index: bool) -> list[object]:
        pattern = "%" + like_escape(query) + "%"
        return [pattern] if use_index else [folded_prefilter(query), pattern]

    # Built-in full-text search over the project's own tokens (L3): the journal writes
    # each entry's tsvector itself (positions, no parser, no stemming), so a query
    # token matches exactly what the local search would; GIN-indexed (migration 0004).
    tokens_sql = "CAST(? AS tsvector)"
    ranked_carry = "e.tokens"
    # Scored after the newest candidates are kept, never for every match.
    ranked_score = "ts_rank_cd(c.ranked, CAST(? AS tsquery))"
    ranked_score_params = 1
    ranked_windows = True

    def ranked_candidates(self, windowed: bool) -> tuple[str, str]:
        if windowed:
            return "entries e", "e.tokens @@ CAST(? AS tsquery)"
        # Without a window the query is sparse: the full-text index alone lists its
        # matches, fenced off from the scope's conditions so the planner never also
        # reads the whole owner's index to intersect it with them.
        return (
            "(SELECT e.row_id, e.created_at, e.session_id, e.seq, e.role, e.text, e.tokens,"
            " e.meta, e.discarded, e.on_branch, e.personal_owner, e.team_id FROM entries e"
            " WHERE e.tokens @@ CAST(? AS tsquery) OFFSET 0) e",
            "TRUE",
        )

    @contextmanager
    def intersected(self, tx: Tx) -> Iterator[None]:
        # Bitmap scans only: the full-text index's matches ANDed with the window's
        # range of the owner's (or team's) index, then only those rows read.
        tx.run("SET LOCAL enable_indexscan = off")
        yield
        tx.run("SET LOCAL enable_indexscan TO DEFAULT")

    def tokens_param(self, tokens: list[str] | None) -> object:
        if tokens is None:
            return None
        # Positions stop at 16383 (PostgreSQL's largest); a lexeme is at most 2 KB.
        kept = tokens[:MAX_POSITION]
        joined = "".join(kept)
        if not kept or "'" in joined or "\\" in joined or max(map(len, kept)) > 500:
            return " ".join(f"{_lexeme(t[:500])}:{n}" for n, t in enumerate(kept, 1))
        # The common case, with nothing to escape or cut: the same text, built at C speed
        # (what a sync spends most of its time on the hub's side).
        return "'" + " '".join(map(str.__add__, kept, _POSITIONS))

    def ranked_expression(self, tree: Node) -> str:
        return tsquery(tree)

    def insert_rows(
        self, cursor: Cursor, table: str, columns: Sequence[str], rows: Sequence[Row]
    ) -> None:
        # COPY streams the rows in one statement: several times faster than a batch
        # of INSERTs for a synced session's thousands of entries. Values go as text,
        # so the tokens column parses tokens_param's tsvector text without a cast.
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
        )
        with cast("psycopg.Cursor[Any]", cursor).copy(statement) as copy:
            for row in rows:
                copy.write_row(row)

    @contextmanager
    def ordered_walk(self, tx: Tx) -> Iterator[None]:
        # One session's entries lie together in the heap, which the planner's per-column
        # correlation cannot see: costed as random reads (4.0), the owner's index loses
        # to the instance-wide newest-first one, filtered down to the owner's rows (9
        # rows read per row kept with 9 owners). 1.1 prices them as the cached pages
        # they are.
        tx.run("SET LOCAL random_page_cost = 1.1")
        yield
        tx.run("SET LOCAL random_page_cost TO DEFAULT")

    def raw_match(self, column: str, group: LikeGroup) -> tuple[str, list[object]]:
        # Under the C collation lower() folds ASCII letters only (ILIKE would fold the
        # text again for every pattern); backslash is LIKE's default escape; array
        # parameters keep the statement text fixed. Most payloads hold no \u escape,
        # so the escaped forms are tried only on those that do.
        low = f'lower({column} COLLATE "C")'
        return (
            f"({low} LIKE ANY (?) OR (strpos({column}, ?) > 0 AND {low} LIKE ANY (?)))",
            [
                [ascii_lower(p) for p in group.plain],
                UNICODE_ESCAPE,
                [ascii_lower(p) for p in group.escaped],
            ],
        )


class PostgresDatabase(Database):
    """A PostgreSQL database reached through a psycopg connection pool."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.dialect = PostgresDialect()
        self.url = url
        self.pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            # A write waiting this long for another transaction's lock gives up: the
            # caller gets 503 and retries, as with SQLite's busy timeout.
            kwargs={"autocommit": True, "options": f"-c lock_timeout={LOCK_TIMEOUT_MS}"},
            open=True,
            name="convodex-server",
        )

    @contextmanager
    def write(self) -> Iterator[Tx]:
        with (
            _translated(),
            self.pool.connection() as conn,
            conn.transaction(),
            conn.cursor() as cur,
        ):
            yield Tx(self.dialect, cur)

    @contextmanager
    def snapshot(self) -> Iterator[Tx]:
        with (
            _translated(),
            self.pool.connection() as conn,
            conn.transaction(),
            conn.cursor() as cur,
        ):
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


@contextmanager
def _translated() -> Iterator[None]:
    """A pool timeout, a lost connection, a key collision or a serialization failure as
    :class:`DatabaseUnavailable` (HTTP 503): the request may be retried."""
    try:
        yield
    except (PoolTimeout, LockNotAvailable, TransactionRollback) as exc:
        raise DatabaseUnavailable("the database is busy") from exc
    except UniqueViolation as exc:
        # Every write checks its keys first, under the session's lock; a collision
        # left is two writers creating the same new id at once. Retried, the loser
        # gets the definite answer (409, or success).
        raise DatabaseUnavailable("a concurrent write collided; retry") from exc
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable("the database is unavailable") from exc
