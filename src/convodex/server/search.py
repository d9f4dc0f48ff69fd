"""The S3 read path: literal substring search, newest first, in one snapshot.

The trigram index (or the raw JSON) only supplies candidates; every hit is then
checked against ownership, channel scope, the active branch and fork completeness
in the same read-only snapshot, so a concurrent writer can never add a hit the
snapshot did not contain. Both paths fold case the same way: the database narrows
the candidates, and the candidate's shown text must contain the query by one rule
(:func:`convodex.text.snippet.find_casefold`), whichever path and database found it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from convodex.errors import AccessDenied, QueryError
from convodex.server.accounts import Caller
from convodex.server.db import Database, Dialect, Tx, micros_to_iso
from convodex.server.matching import like_groups
from convodex.server.teams import scope_teams
from convodex.sqlite import marks
from convodex.team_models import ServerHit
from convodex.text.shown import shown_text, storable
from convodex.text.snippet import find_casefold, literal_snippet

SCOPES = ("account", "team", "instance")
#: the largest ``limit`` the Python API honours (HTTP allows 200)
MAX_LIMIT = 500
#: projected candidates fetched per query, newest first
PAGE_SIZE = 500
#: raw-JSON candidates examined per query (SPEC S5), newest first
RAW_WINDOW = 500
#: raw-JSON matches one search accepts in total, over all its round trips (SPEC S3)
RAW_MATCHES = 500
SNIPPET_RADIUS = 60
#: newest rows in scope a projected search walks first, before asking the trigram index
PROBE_WINDOW = 1000
#: the most rows a second walk examines, when the first one's matches predict the page
#: fills within them (a dense query); a sparse one goes to the trigram index
WALK_LIMIT = 16_000
#: a scope with at most this many rows is scanned outright, without the trigram index
SMALL_SCOPE = 5000
#: the most sessions whose sizes a search sums to tell a small scope
SCOPE_SESSIONS = 200

Key = tuple[Any, int]

_SHOWN = "e.role IN ('user', 'assistant') AND NOT e.meta AND NOT e.discarded"
_SHOWN_ENTRY = _SHOWN + " AND e.on_branch AND s.fork_state = 'complete'"
_ORDER = " ORDER BY e.created_at DESC, e.row_id DESC"


class Candidate(NamedTuple):
    """One candidate row as every candidate query selects it."""

    row_id: int
    created_at: Any
    session_id: str
    seq: int
    #: projected text, raw payload JSON, or ``None``: a raw candidate that did not match
    body: str | None
    is_raw: int
    role: str
    title: str
    owner_id: str
    #: 1 when the candidate passed the branch, fork and shown-entry checks
    eligible: int
    #: raw path only: on the row that ends a window, how many entries it examined
    examined: int = 0


def _columns(body: str = "e.text", raw: str = "0", ok: str = "1") -> str:
    return (
        f"e.row_id AS row_id, e.created_at AS created_at, e.session_id AS session_id,"
        f" e.seq AS seq, {body} AS body, {raw} AS is_raw, e.role AS role, s.title AS title,"
        f" s.owner_id AS owner_id, {ok} AS eligible"
    )


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units (what the S3 minimum length counts)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def uses_projection(query: str) -> bool:
    """≥ 3 code points the projection can hold (no NUL, no lone surrogate): the
    trigram-indexed projected text can answer."""
    return len(query) >= 3 and storable(query) == query


@dataclass(frozen=True)
class Reach:
    """What a search may read: the scope's name and, in team scope, the team ids."""

    name: str
    teams: tuple[str, ...] = ()

    def in_teams(self, column: str) -> tuple[str, list[object]]:
        return f" AND {column} IN ({marks(self.teams)})", list(self.teams)


def _scope_entries(scope: Reach, caller: Caller) -> tuple[str, list[object]]:
    """The scope's condition on ``e`` alone: in account scope ``e.personal_owner`` (in
    team scope ``e.team_id``), which lets a newest-first index drive the read."""
    if scope.name == "account":
        return " AND e.personal_owner = ?", [caller.id]
    if scope.name == "team":
        return scope.in_teams("e.team_id")
    return "", []


def scope_sql(scope: Reach, caller: Caller) -> tuple[str, list[object]]:
    """The scope's conditions on ``e`` (entries) and ``s`` (their sessions): the
    session's own owner and kind decide (an index supplies candidates, never access)."""
    sql, params = _scope_entries(scope, caller)
    if scope.name == "account":
        return sql + " AND s.owner_id = ? AND s.kind = 'personal'", [*params, caller.id]
    if scope.name == "team":
        team_sql, team_params = scope.in_teams("s.team_id")
        return sql + team_sql, params + team_params
    return sql, params


def _range_sql(cursor: Key | None, lower: Key | None) -> tuple[str, list[object]]:
    """Keys strictly older than ``cursor`` and no older than ``lower``.

    The plain ``created_at`` bound beside each row comparison is implied by it; it is
    there because planners estimate a single column's range far better.
    """
    sql = ""
    params: list[object] = []
    if cursor is not None:
        sql += " AND e.created_at <= ? AND (e.created_at, e.row_id) < (?, ?)"
        params += [cursor[0], cursor[0], cursor[1]]
    if lower is not None:
        sql += " AND e.created_at >= ? AND (e.created_at, e.row_id) >= (?, ?)"
        params += [lower[0], lower[0], lower[1]]
    return sql, params


def _raw_filter(dialect: Dialect, column: str, query: str) -> tuple[str, list[object]]:
    """``column`` (raw JSON) may contain ``query`` in some JSON encoding."""
    parts: list[str] = []
    params: list[object] = []
    for group in like_groups(query):
        sql, group_params = dialect.raw_match(column, group)
        parts.append(sql)
        params += group_params
    return "(" + " AND ".join(parts) + ")", params


@dataclass(frozen=True)
class _Plan:
    """What one candidate query covers: the key range and whether to use the index."""

    cursor: Key | None = None
    lower: Key | None = None
    size: int | None = None
    use_index: bool = True
    #: a walk: the most newest-first rows it examines
    window: int = 0


def _projected_query(
    dialect: Dialect, caller: Caller, query: str, scope: Reach, plan: _Plan
) -> tuple[str, list[object]]:
    """One page of projected candidates (newest first) as ``(sql, params)``; in
    instance scope together with unprojected channel entries matched on raw JSON."""
    in_scope, scope_params = scope_sql(scope, caller)
    range_sql, range_params = _range_sql(plan.cursor, plan.lower)
    source = dialect.text_source(plan.use_index)
    match = "e.text IS NOT NULL AND " + dialect.text_match(plan.use_index)
    match_params = dialect.text_params(query, plan.use_index)
    parts: list[str] = []
    params: list[object] = []
    if scope.name == "instance" and plan.use_index and plan.size is not None:
        # Candidate pages: the index's newest matches first, checked afterwards, so a
        # mid-frequency query never joins every match before sorting.
        parts.append(
            f"SELECT {_columns(ok=f'CASE WHEN {_SHOWN_ENTRY} THEN 1 ELSE 0 END')} FROM"
            " (SELECT e.row_id, e.created_at, e.session_id, e.seq, e.text, e.role, e.meta,"
            f" e.discarded, e.on_branch FROM {source} WHERE {match}{range_sql}{_ORDER}"
            " LIMIT ?) e JOIN sessions s ON s.id = e.session_id"
        )
        params += match_params + range_params + [plan.size]
    elif plan.use_index:
        parts.append(
            f"SELECT {_columns()} FROM {source} JOIN sessions s ON s.id = e.session_id"
            f" WHERE {match} AND {_SHOWN_ENTRY}{in_scope}{range_sql}"
        )
        params += match_params + scope_params + range_params
    else:
        # A scan: the rows in scope first, then the text match on those alone (a
        # planner left to itself may match the text of every entry before the join).
        parts.append(
            f"SELECT {_columns()} FROM (SELECT e.* FROM entries e JOIN sessions s"
            f" ON s.id = e.session_id WHERE e.text IS NOT NULL AND {_SHOWN_ENTRY}{in_scope}"
            f"{range_sql}{dialect.fence}) e JOIN sessions s ON s.id = e.session_id"
            f" WHERE {match}"
        )
        params += scope_params + range_params + match_params
    if scope.name == "instance":
        # Historical channel journals can predate the projection: match their raw JSON.
        raw_sql, raw_params = _raw_filter(dialect, "e.payload", query)
        parts.append(
            f"SELECT {_columns(body='e.payload', raw='1')}"
            " FROM entries e JOIN sessions s ON s.id = e.session_id"
            f" WHERE NOT e.projected AND e.text IS NULL AND {_SHOWN_ENTRY}"
            f" AND s.kind = 'channel' AND {raw_sql}{range_sql}"
        )
        params += raw_params + range_params
    if len(parts) == 1:
        sql = parts[0] + _ORDER
    else:
        sql = (
            "SELECT * FROM (" + " UNION ALL ".join(parts) + ") u"
            " ORDER BY u.created_at DESC, u.row_id DESC"
        )
    if plan.size is not None:
        sql += " LIMIT ?"
        params.append(plan.size)
    return sql, params


def _walk_query(
    dialect: Dialect, caller: Caller, query: str, scope: Reach, plan: _Plan
) -> tuple[str, list[object]]:
    """The first ``plan.size`` matches among the scope's ``plan.window`` newest search
    rows older than ``plan.cursor``, newest first: a walk of the scope's newest-first
    index (the owner's or the team's) that stops at a full page, so its cost follows
    how dense the query's matches are, not how many the instance holds. The sessions
    are joined for the matches alone."""
    entries_sql, entries_params = _scope_entries(scope, caller)
    check_sql, check_params = scope_sql(scope, caller)
    range_sql, range_params = _range_sql(plan.cursor, None)
    sql = (
        f"SELECT {_columns()} FROM (SELECT e.row_id, e.created_at, e.session_id, e.seq,"
        " e.text, e.role, e.meta, e.discarded, e.on_branch, e.personal_owner, e.team_id"
        f" FROM entries e WHERE e.text IS NOT NULL AND {_SHOWN}{entries_sql}{range_sql}"
        f"{_ORDER} LIMIT ?) e JOIN sessions s ON s.id = e.session_id"
        f" WHERE {dialect.text_match(False)} AND {_SHOWN_ENTRY}{check_sql}{_ORDER} LIMIT ?"
    )
    params = [*entries_params, *range_params, plan.window]
    params += dialect.text_params(query, False) + check_params + [plan.size]
    return sql, params


def _raw_query(
    dialect: Dialect, caller: Caller, query: str, scope: Reach, cursor: Key | None
) -> tuple[str, list[object]]:
    """The next ``RAW_WINDOW`` entries in scope, newest first: the database examines
    that many raw candidates per round trip, whatever the query matches, and returns
    those whose payload may contain ``query``, then one row marking where the window
    ended (no body, ``examined`` = the window's size) for the next cursor.

    The window is read from a newest-first index of the entries alone — the instance's,
    or the owner's in account scope — and sessions are joined afterwards, so no planner
    can choose to sort the whole scope for every window."""
    range_sql, range_params = _range_sql(cursor, None)
    raw_sql, raw_params = _raw_filter(dialect, "e.payload", query)
    entries_sql, entries_params = _scope_entries(scope, caller)
    check_sql, check_params = scope_sql(scope, caller)
    window = (
        "SELECT e.row_id, e.created_at, e.session_id, e.seq, e.payload, e.role,"
        f" e.personal_owner, e.team_id FROM entries e WHERE {_SHOWN} AND e.on_branch{entries_sql}"
        f"{range_sql}"
    )
    eligible = f"CASE WHEN s.fork_state = 'complete'{check_sql} THEN 1 ELSE 0 END"
    columns = (
        "e.row_id, e.created_at, e.session_id, e.seq, {body}, 1, e.role, s.title, s.owner_id,"
        " {ok}, {examined}"
    )
    sql = (
        f"WITH w AS ({window}{_ORDER} LIMIT ?)"
        f" SELECT {columns.format(body='e.payload', ok=eligible, examined='0')}"
        f" FROM w e JOIN sessions s ON s.id = e.session_id WHERE {raw_sql}"
        " UNION ALL"
        f" SELECT {columns.format(body='NULL', ok='0', examined='(SELECT COUNT(*) FROM w)')}"
        " FROM (SELECT * FROM w ORDER BY created_at, row_id LIMIT 1) e"
        " JOIN sessions s ON s.id = e.session_id"
        " ORDER BY 2 DESC, 1 DESC"
    )
    return sql, entries_params + range_params + [RAW_WINDOW] + check_params + raw_params


def _scope_rows(tx: Tx, caller: Caller, scope: Reach, cap: int) -> int:
    """About how many search rows the scope holds, counted up to ``cap``.

    In account and team scope the sessions' head positions stand in for their entries,
    summed over at most ``SCOPE_SESSIONS`` of them (more sessions than that count as a
    large scope): a bounded index read instead of a join over every entry, close
    enough to choose a plan.
    """
    if scope.name in ("account", "team"):
        params: list[object] = [caller.id]
        if scope.name == "account":
            where = "owner_id = ? AND kind = 'personal'"
        else:
            team_sql, params = scope.in_teams("team_id")
            where = "TRUE" + team_sql
        row = tx.one(
            "SELECT CASE WHEN COUNT(*) > ? THEN ? ELSE COALESCE(SUM(head_seq), 0) END"
            f" FROM (SELECT head_seq FROM sessions WHERE {where} LIMIT ?) c",
            [SCOPE_SESSIONS, cap, *params, SCOPE_SESSIONS + 1],
        )
    else:
        row = tx.one(
            "SELECT COUNT(*) FROM (SELECT 1 FROM entries e"
            f" WHERE e.text IS NOT NULL AND {_SHOWN} LIMIT ?) c",
            (cap,),
        )
    return min(int(row[0]), cap) if row is not None else 0


def window_boundary(tx: Tx, caller: Caller, scope: Reach, window: int) -> Key | None:
    """The key of the scope's ``window``-th newest shown-role entry, or ``None`` if
    there are fewer: read from the scope's newest-first index alone (the owner's, the
    team's, the instance's), without the heap where the visibility map allows. Any key
    splits a search exactly; this one bounds how much each side reads."""
    entries_sql, entries_params = _scope_entries(scope, caller)
    with tx.dialect.ordered_walk(tx):
        row = tx.one(
            f"SELECT e.created_at, e.row_id FROM entries e WHERE {_SHOWN}{entries_sql}"
            f"{_ORDER} LIMIT 1 OFFSET ?",
            [*entries_params, window - 1],
        )
    return None if row is None else (row[0], int(row[1]))


def _hit(dialect: Dialect, row: Candidate, query: str) -> ServerHit | None:
    """A hit for a candidate row, or ``None`` when its shown text lacks the query."""
    if row.body is None:
        return None
    if row.is_raw:
        try:
            message = json.loads(row.body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(message, dict):
            return None
        text = shown_text(message)
    else:
        text = row.body
    span = find_casefold(text, query)
    if span is None:
        return None
    return ServerHit(
        session_id=str(row.session_id),
        session_title=str(row.title),
        seq=int(row.seq),
        role=str(row.role),
        snippet=storable(literal_snippet(text, query, SNIPPET_RADIUS)),
        ts=micros_to_iso(dialect.ts_value(row.created_at)),
        owner_id=str(row.owner_id),
    )


def check_scope(caller: Caller, scope: str, team: str | None = None) -> None:
    if scope not in SCOPES:
        raise QueryError("scope must be account, team or instance")
    if scope == "instance" and not caller.is_admin:
        raise AccessDenied("only administrators may search the whole instance")
    if team is not None and scope != "team":
        raise QueryError("team= goes with scope=team")


def reach(tx: Tx, caller: Caller, scope: str, team: str | None) -> Reach:
    """The checked scope as a :class:`Reach` (team names resolved, membership checked)."""
    check_scope(caller, scope, team)
    if scope != "team":
        return Reach(scope)
    return Reach(scope, tuple(scope_teams(tx, caller, team)))


def search_messages(
    db: Database,
    caller: Caller,
    query: str,
    limit: int = 50,
    scope: str = "account",
    *,
    team: str | None = None,
    on_page: Callable[[], None] | None = None,
) -> list[ServerHit]:
    """Messages whose shown text contains ``query`` (case-insensitive), newest first.

    ``on_page`` runs after each candidate query is read; tests use it to interleave
    a concurrent writer with one search.
    """
    check_scope(caller, scope, team)
    needle = query.strip()
    if utf16_length(needle) < 2 or limit <= 0:
        return []
    found = _Found(db.dialect, needle, min(limit, MAX_LIMIT))
    with db.snapshot() as tx:
        where = reach(tx, caller, scope, team)
        if where.name == "team" and not where.teams:
            return []
        if uses_projection(needle):
            _projected_search(tx, caller, where, found, on_page)
        else:
            _raw_search(tx, caller, where, found, on_page)
    return found.hits


def _raw_search(
    tx: Tx, caller: Caller, scope: Reach, found: _Found, on_page: Callable[[], None] | None
) -> None:
    """Windows of ``RAW_WINDOW`` entries, newest first, until enough hits or no more."""
    while not found.done and found.raw_left > 0:
        with tx.dialect.ordered_walk(tx):
            rows = tx.all(*_raw_query(tx.dialect, caller, found.needle, scope, found.cursor))
        found.take(rows)
        if on_page is not None:
            on_page()
        if max((Candidate(*row).examined for row in rows), default=0) < RAW_WINDOW:
            return


def _projected_search(
    tx: Tx, caller: Caller, scope: Reach, found: _Found, on_page: Callable[[], None] | None
) -> None:
    cursor: Key | None = None
    use_index = True
    if _scope_rows(tx, caller, scope, SMALL_SCOPE + 1) <= SMALL_SCOPE:
        # A small scope is scanned outright: reading a few thousand rows beats listing
        # every match of a common query across the instance (and SQLite would drive
        # any MATCH from the FTS5 table).
        use_index = False
    elif walks(scope):
        cursor = _walk(tx, caller, scope, found, on_page)
    else:
        cursor = _probe(tx, caller, scope, found, on_page)
    while not found.done:
        size = min(PAGE_SIZE, found.limit - len(found.hits))
        plan = _Plan(cursor=cursor, size=size, use_index=use_index)
        rows = tx.all(*_projected_query(tx.dialect, caller, found.needle, scope, plan))
        found.take(rows)
        cursor = found.cursor
        if on_page is not None:
            on_page()
        if len(rows) < size:
            return


def _probe(
    tx: Tx, caller: Caller, scope: Reach, found: _Found, on_page: Callable[[], None] | None
) -> Key | None:
    """Instance scope: its newest ``PROBE_WINDOW`` rows by a plain range scan (cheap
    however common the query is, channel entries' raw JSON included); return where the
    trigram index takes over."""
    lower = window_boundary(tx, caller, scope, PROBE_WINDOW)
    if lower is None:
        return None
    probe = _Plan(lower=lower, size=found.limit, use_index=False)
    rows = tx.all(*_projected_query(tx.dialect, caller, found.needle, scope, probe))
    found.take(rows)
    if on_page is not None:
        on_page()
    return lower if len(rows) < found.limit else found.cursor


def walks(scope: Reach) -> bool:
    """Whether the scope has one newest-first index to walk: an owner's, or one team's."""
    return scope.name == "account" or (scope.name == "team" and len(scope.teams) == 1)


def _walk(
    tx: Tx, caller: Caller, scope: Reach, found: _Found, on_page: Callable[[], None] | None
) -> Key | None:
    """Walk the scope's newest rows while the query's matches are dense enough to fill
    the page soon; return where the trigram index takes over (``found`` is done when
    it need not).

    The first walk examines ``PROBE_WINDOW`` rows. A walk that fills its page goes on
    from its last match; one that does not has seen every match in its window, and
    how many it saw decides what reads the rest: another walk over as many rows as
    that density predicts the page needs (up to ``WALK_LIMIT``), or, when the matches
    are sparse, the trigram index. Either way the hits are exactly the newest ones:
    each walk or index read starts right after the last candidate taken.
    """
    window = PROBE_WINDOW
    while not found.done:
        size = min(PAGE_SIZE, found.limit - len(found.hits))
        plan = _Plan(cursor=found.cursor, size=size, window=window)
        with tx.dialect.ordered_walk(tx):
            rows = tx.all(*_walk_query(tx.dialect, caller, found.needle, scope, plan))
        found.take(rows)
        if on_page is not None:
            on_page()
        if len(rows) >= size:
            window = PROBE_WINDOW
            continue
        if not rows or window != PROBE_WINDOW:
            # Sparse (or a second walk fell short): the rest is the index's, from the
            # last match (a walk that matched nothing leaves the cursor where it was).
            return found.cursor
        needed = (size - len(rows)) * window // len(rows)
        if needed * 2 > WALK_LIMIT:
            return found.cursor
        window = max(needed * 2, PROBE_WINDOW)
    return found.cursor


class _Found:
    """Hits accepted so far and the cursor after the last candidate read."""

    def __init__(self, dialect: Dialect, needle: str, limit: int) -> None:
        self.dialect = dialect
        #: the whole search reads raw JSON (short or NUL queries)
        self.raw_only = not uses_projection(needle)
        self.needle = needle
        self.limit = limit
        self.hits: list[ServerHit] = []
        self.cursor: Key | None = None
        #: raw-JSON matches this search may still accept (``RAW_MATCHES`` in all)
        self.raw_left = RAW_MATCHES

    @property
    def done(self) -> bool:
        return len(self.hits) >= self.limit

    def take(self, rows: list[tuple[Any, ...]]) -> None:
        for raw in rows:
            if self.done:
                return
            row = Candidate(*raw)
            self.cursor = (row.created_at, int(row.row_id))
            if row.is_raw and row.body is not None:
                # The cap counts every raw match the database returned, hit or not:
                # it bounds the work of a query whose bytes are in every payload.
                if self.raw_left <= 0:
                    if self.raw_only:
                        return
                    continue
                self.raw_left -= 1
            if not row.eligible:
                continue
            hit = _hit(self.dialect, row, self.needle)
            if hit is not None:
                self.hits.append(hit)
