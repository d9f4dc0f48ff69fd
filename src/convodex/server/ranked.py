"""Ranked hub search (SPEC S6): the local query language (L12) with its filters (L13),
ranked, over the projection's own tokens (L3).

One parser (``convodex.text.query``) for the local search and the hub: the same
words, phrases, ``OR``, ``NOT``, ``prefix*``, CJK bigrams and single CJK characters,
and 1–2 character words, which the literal mode can only find through raw JSON.
The database's full-text index supplies and ranks candidates (FTS5 BM25 on SQLite,
``ts_rank_cd`` on PostgreSQL); every candidate passes the literal mode's checks
(shown entry, active branch, complete fork, the scope by the session's own owner
and team) in the same read-only snapshot, and its snippet is centred where the
query matches its shown text.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from convodex.errors import InvalidInput, QueryError
from convodex.server.accounts import Caller
from convodex.server.db import Database, Row, Tx, micros_to_iso
from convodex.server.inputs import check_int64
from convodex.server.search import (
    MAX_LIMIT,
    SNIPPET_RADIUS,
    Reach,
    reach,
    scope_sql,
    walks,
    window_boundary,
)
from convodex.sqlite import marks
from convodex.team_models import RankedHit, RankedPage
from convodex.text.dates import parse_time
from convodex.text.matches import first_match
from convodex.text.query import Query, parse
from convodex.text.shown import storable
from convodex.text.snippet import window

_SHOWN_ENTRY = (
    "e.role IN ('user', 'assistant') AND NOT e.meta AND NOT e.discarded AND e.on_branch"
    " AND s.fork_state = 'complete' AND s.deleted_at IS NULL AND e.text IS NOT NULL"
)
#: qualifiers the hub's sessions can answer (the rest need the local catalog)
HUB_QUALIFIERS = ("agent", "project", "role", "session", "since", "until")


@dataclass(frozen=True)
class RankedFilters:
    """L13 filters given beside the query (request parameters); the query's own
    qualifiers add to them."""

    agent: str | None = None
    project: str | None = None
    since: str | None = None
    until: str | None = None


def _values(query: Query, filters: RankedFilters, name: str) -> list[str]:
    given = getattr(filters, name, None)
    return [*query.qualifiers.get(name, ()), *([given] if given else [])]


def _filter_sql(tx: Tx, query: Query, filters: RankedFilters) -> tuple[str, list[object]]:
    """The filters as SQL on ``e`` and ``s``, applied before ranking and the limit."""
    unknown = sorted(set(query.qualifiers) - set(HUB_QUALIFIERS))
    if unknown:
        raise QueryError(f"the hub does not filter by {unknown[0]}:")
    sql = ""
    params: list[object] = []
    agents = [a.replace("-", "_") for a in _values(query, filters, "agent")]
    if agents:
        sql += f" AND s.agent IN ({marks(agents)})"
        params += agents
    for project in _values(query, filters, "project"):
        # L13: the workspace itself, any ancestor directory, or its last component.
        base = project.rstrip("/") or "/"
        sql += (
            " AND (s.project = ? OR s.project LIKE ? ESCAPE '\\' OR s.project LIKE ? ESCAPE '\\')"
        )
        params += [base, _like(base) + "/%", "%/" + _like(base)]
    for name, column in (("role", "e.role"), ("session", "s.id")):
        values = _values(query, filters, name)
        if values:
            sql += f" AND {column} IN ({marks(values)})"
            params += values
    now_ms = int(time.time() * 1000)
    for name, op, end in (("since", ">=", False), ("until", "<=", True)):
        for value in _values(query, filters, name):
            ms = parse_time(value, now_ms, name=name, end_of_day=end)
            sql += f" AND e.created_at {op} ?"
            params.append(tx.ts(ms * 1000))
    return sql, params


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _encode_cursor(score: float, micros: int, row_id: int) -> str:
    """Where a page ended: the last hit's exact score, time and row (keyset)."""
    raw = json.dumps([repr(float(score)), micros, row_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[float, int, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        score, micros, row_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        value = float(score)
        if not math.isfinite(value) or isinstance(micros, bool) or isinstance(row_id, bool):
            raise ValueError
        return value, check_int64(micros, "cursor"), check_int64(row_id, "cursor")
    except (ValueError, TypeError, binascii.Error, InvalidInput):
        raise QueryError("the cursor is not valid") from None


#: the newest matches in scope a ranked search ranks: its answer is their best (a
#: common word's every match is never read, however many the scope holds)
RANK_CANDIDATES = 200
#: the scope's newest entries a first window holds (see :func:`_windowed`)
RANK_WINDOW = 20_000
#: the largest window; a query sparser than that ranks from the whole index
RANK_WINDOW_MAX = 200_000

Key = tuple[object, int]


def search_ranked(
    db: Database,
    caller: Caller,
    text: str,
    limit: int = 50,
    scope: str = "account",
    *,
    team: str | None = None,
    filters: RankedFilters | None = None,
    cursor: str | None = None,
) -> RankedPage:
    """The best ``limit`` of the scope's newest ``RANK_CANDIDATES`` shown messages that
    match an L12 query, best first (ties: newest); ``cursor`` (a page's
    ``next_cursor``) continues after that page's last hit, exactly (score, then time,
    then row)."""
    query = parse(text)  # a malformed query is one clear QueryError
    after = _decode_cursor(cursor) if cursor else None
    if limit <= 0:
        return RankedPage(hits=[], next_cursor=None)
    size = min(limit, MAX_LIMIT)
    dialect = db.dialect
    expression = dialect.ranked_expression(query.tree)
    with db.snapshot() as tx:
        where = reach(tx, caller, scope, team)
        if where.name == "team" and not where.teams:
            return RankedPage(hits=[], next_cursor=None)
        scope_clause, scope_params = scope_sql(where, caller)
        filter_clause, filter_params = _filter_sql(tx, query, filters or RankedFilters())
        after_clause, after_params = "", []
        if after is not None:
            score, micros, row_id = after
            after_clause = (
                " WHERE r.score < ? OR (r.score = ? AND (r.created_at < ?"
                " OR (r.created_at = ? AND r.row_id < ?)))"
            )
            stamp = tx.ts(micros)
            after_params = [score, score, stamp, stamp, row_id]

        def ranked(lower: Key | None) -> list[Row]:
            """One candidate read and ranking: the newest candidates no older than
            ``lower`` (all of them without one), each row ending with their count."""
            source, match = dialect.ranked_candidates(lower is not None)
            window_clause, window_params = "", []
            if lower is not None:
                window_clause = " AND e.created_at >= ? AND (e.created_at, e.row_id) >= (?, ?)"
                window_params = [lower[0], lower[0], lower[1]]
            candidates = (
                "SELECT e.row_id, e.created_at, e.session_id, e.seq, e.role, e.text, s.title,"
                f" s.owner_id, s.machine, s.agent, s.project, {dialect.ranked_carry} AS ranked"
                f" FROM {source} JOIN sessions s ON s.id = e.session_id WHERE {match} AND"
                f" {_SHOWN_ENTRY}{scope_clause}{filter_clause}{window_clause}"
                " ORDER BY e.created_at DESC, e.row_id DESC LIMIT ?"
            )
            sql = (
                "SELECT * FROM (SELECT c.session_id, c.title, c.seq, c.role, c.text,"
                " c.created_at, c.owner_id, c.machine, c.agent, c.project,"
                # As a double: PostgreSQL's real would come back rounded to its shortest
                # text, and a cursor could not name it exactly.
                f" CAST({dialect.ranked_score} AS DOUBLE PRECISION) AS score, c.row_id,"
                f" COUNT(*) OVER () AS candidates FROM ({candidates}) c) r{after_clause}"
                " ORDER BY r.score DESC, r.created_at DESC, r.row_id DESC LIMIT ?"
            )
            params: list[object] = [expression] * (dialect.ranked_score_params + 1)
            params += [*scope_params, *filter_params, *window_params, RANK_CANDIDATES]
            return tx.all(sql, [*params, *after_params, size + 1])

        rows = None
        if dialect.ranked_windows and walks(where):
            rows = _windowed(tx, caller, where, ranked)
        if rows is None:
            rows = ranked(None)
        more = len(rows) > size
        rows = rows[:size]
        hits = []
        for row in rows:
            sid, title, seq, role, shown, created, owner, machine, agent, project, score = row[:11]
            span = first_match(query, str(shown)) or (0, 0)
            hits.append(
                RankedHit(
                    session_id=str(sid),
                    session_title=str(title),
                    seq=int(seq),
                    role=str(role),
                    snippet=storable(window(str(shown), span[0], span[1], SNIPPET_RADIUS)),
                    ts=micros_to_iso(dialect.ts_value(created)),
                    owner_id=str(owner),
                    machine=str(machine),
                    agent=str(agent),
                    project=str(project),
                    score=round(float(score), 6),
                )
            )
        next_cursor = None
        if more:
            last = rows[-1]
            next_cursor = _encode_cursor(float(last[10]), dialect.ts_value(last[5]), int(last[11]))
        return RankedPage(hits=hits, next_cursor=next_cursor)


def _windowed(
    tx: Tx,
    caller: Caller,
    where: Reach,
    ranked: Callable[[Key | None], list[Row]],
) -> list[Row] | None:
    """The ranked rows from a window of the scope's newest entries that holds all the
    candidates, or ``None`` when the query is too sparse for one (the whole index then
    serves, reading few matches).

    A common word matches thousands of the scope's entries and many times more across
    the instance: reading every match to keep the newest would cost what the index
    holds. A window (the scope's newest N entries, its oldest key read from the
    owner's or team's index alone) lets the database intersect the word's index with
    that range and read only the window's matches. The first holds ``RANK_WINDOW``
    entries; when it holds some matches but fewer than ``RANK_CANDIDATES``, one more,
    sized by the density seen, up to ``RANK_WINDOW_MAX``.
    """
    size = RANK_WINDOW
    while True:
        lower = window_boundary(tx, caller, where, size)
        if lower is None:
            return None  # the whole scope is smaller than the window
        with tx.dialect.intersected(tx):
            rows = ranked(lower)
        found = int(rows[0][12]) if rows else 0
        if found >= RANK_CANDIDATES:
            return rows
        if not found or size >= RANK_WINDOW_MAX:
            return None
        size = min(RANK_WINDOW_MAX, size * RANK_CANDIDATES * 3 // (2 * found))
