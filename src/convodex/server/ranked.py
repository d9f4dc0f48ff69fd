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

import time
from dataclasses import dataclass

from convodex.errors import QueryError
from convodex.models import RankedHit
from convodex.server.accounts import Caller
from convodex.server.db import Database, Tx, micros_to_iso
from convodex.server.search import MAX_LIMIT, SNIPPET_RADIUS, reach, scope_sql
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
        sql += f" AND s.agent IN ({', '.join('?' for _ in agents)})"
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
            sql += f" AND {column} IN ({', '.join('?' for _ in values)})"
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


def search_ranked(
    db: Database,
    caller: Caller,
    text: str,
    limit: int = 50,
    scope: str = "account",
    *,
    team: str | None = None,
    filters: RankedFilters | None = None,
) -> list[RankedHit]:
    """The best ``limit`` shown messages for an L12 query, best first (ties: newest)."""
    query = parse(text)  # a malformed query is one clear QueryError
    if limit <= 0:
        return []
    size = min(limit, MAX_LIMIT)
    dialect = db.dialect
    expression = dialect.ranked_expression(query.tree)
    with db.snapshot() as tx:
        where = reach(tx, caller, scope, team)
        if where.name == "team" and not where.teams:
            return []
        scope_clause, scope_params = scope_sql(where, caller)
        filter_clause, filter_params = _filter_sql(tx, query, filters or RankedFilters())
        sql = (
            "SELECT e.session_id, s.title, e.seq, e.role, e.text, e.created_at, s.owner_id,"
            f" s.machine, s.agent, s.project, {dialect.ranked_score} AS score"
            f" FROM {dialect.ranked_from} JOIN sessions s ON s.id = e.session_id"
            f" WHERE {dialect.ranked_where} AND {_SHOWN_ENTRY}{scope_clause}{filter_clause}"
            " ORDER BY score DESC, e.created_at DESC, e.row_id DESC LIMIT ?"
        )
        params = [expression] * dialect.ranked_score_params + [expression]
        rows = tx.all(sql, [*params, *scope_params, *filter_params, size])
        hits = []
        for sid, title, seq, role, shown, created, owner, machine, agent, project, score in rows:
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
        return hits
