"""The S3 read path: literal substring search, newest first, in one snapshot.

The trigram index (or the raw JSON) only supplies candidates; every hit is then
checked against ownership, channel scope, the active branch and fork completeness
in the same read-only snapshot, so a concurrent writer can never add a hit the
snapshot did not contain.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from convodex.errors import AccessDenied, QueryError
from convodex.server.accounts import Caller
from convodex.server.db import Database, Row, Tx, like_escape, micros_to_iso
from convodex.text.shown import shown_text
from convodex.text.snippet import find_casefold, literal_snippet

SCOPES = ("account", "instance")
#: the largest ``limit`` the Python API honours (HTTP allows 200)
MAX_LIMIT = 500
#: candidates fetched per query, newest first
PAGE_SIZE = 500
#: raw-JSON matches accepted per search, at most
RAW_MATCH_CAP = 500
SNIPPET_RADIUS = 60
#: newest rows a projected search scans before asking the trigram index
PROBE_WINDOW = 400
#: a scope with at most this many rows is scanned outright, without the trigram index
SMALL_SCOPE = 5000

# The last column says whether the candidate passed the checks (see _page_query).
_COLUMNS = (
    "{a}.row_id, {a}.created_at, e.session_id, e.seq, {body}, {raw}, e.role, s.title,"
    " s.owner_id, {ok}"
)
_SHOWN_ENTRY = (
    "e.role IN ('user', 'assistant') AND NOT e.meta AND NOT e.discarded"
    " AND e.on_branch AND s.fork_state = 'complete'"
)


@dataclass(frozen=True)
class Hit:
    """One search hit; :meth:`as_json` is its camelCase wire shape."""

    session_id: str
    session_title: str
    seq: int
    role: str
    snippet: str
    ts: str
    owner_id: str

    def as_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "sessionTitle": self.session_title,
            "seq": self.seq,
            "role": self.role,
            "snippet": self.snippet,
            "ts": self.ts,
            "ownerId": self.owner_id,
        }


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units (what the S3 minimum length counts)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def uses_projection(query: str) -> bool:
    """≥ 3 code points and no NUL: the trigram-indexed projected text can answer."""
    return len(query) >= 3 and "\x00" not in query


def raw_patterns(query: str) -> list[str]:
    """LIKE patterns for the query as it appears inside a JSON string literal, both
    with non-ASCII kept and with it ``\\u``-escaped (the two ways encoders write it)."""
    forms = {json.dumps(query, ensure_ascii=False)[1:-1], json.dumps(query)[1:-1]}
    return ["%" + like_escape(form) + "%" for form in sorted(forms)]


def _scope_sql(scope: str, caller: Caller) -> tuple[str, list[object]]:
    if scope == "account":
        return " AND s.owner_id = ? AND s.kind = 'personal'", [caller.id]
    return "", []


def _range_sql(
    alias: str, cursor: tuple[Any, int] | None, lower: tuple[Any, int] | None
) -> tuple[str, list[object]]:
    """Keys strictly older than ``cursor`` and no older than ``lower``.

    The plain ``created_at`` bound beside each row comparison is implied by it; it is
    there because planners estimate a single column's range far better.
    """
    sql = ""
    params: list[object] = []
    if cursor is not None:
        sql += f" AND {alias}.created_at <= ? AND ({alias}.created_at, {alias}.row_id) < (?, ?)"
        params += [cursor[0], cursor[0], cursor[1]]
    if lower is not None:
        sql += f" AND {alias}.created_at >= ? AND ({alias}.created_at, {alias}.row_id) >= (?, ?)"
        params += [lower[0], lower[0], lower[1]]
    return sql, params


@dataclass(frozen=True)
class _Plan:
    """What one candidate query covers: the key range and whether to use the index."""

    cursor: tuple[Any, int] | None = None
    lower: tuple[Any, int] | None = None
    size: int | None = None
    use_index: bool = True


def _page_query(
    db: Database, caller: Caller, query: str, scope: str, plan: _Plan
) -> tuple[str, list[object]]:
    """One page of candidates (newest first) as ``(sql, params)``."""
    dialect = db.dialect
    scope_sql, scope_params = _scope_sql(scope, caller)
    patterns = raw_patterns(query)
    raw_sql = "(" + " OR ".join(dialect.raw_match("e.payload") for _ in patterns) + ")"
    parts: list[str] = []
    params: list[object] = []
    if uses_projection(query):
        source, match = dialect.text_candidates(plan.use_index)
        range_sql, range_params = _range_sql("r", plan.cursor, plan.lower)
        if scope == "instance" and plan.use_index and plan.size is not None:
            # Candidate pages: the index's newest matches first, checked afterwards, so a
            # mid-frequency query never joins every match before sorting.
            parts.append(
                "SELECT "
                + _COLUMNS.format(
                    a="c", body="c.text", raw="0", ok=f"CASE WHEN {_SHOWN_ENTRY} THEN 1 ELSE 0 END"
                )
                + f" FROM (SELECT r.row_id, r.created_at, r.text FROM {source}"
                f" WHERE {match}{range_sql} ORDER BY r.created_at DESC, r.row_id DESC LIMIT ?) c"
                " JOIN entries e ON e.row_id = c.row_id JOIN sessions s ON s.id = e.session_id"
            )
            params += dialect.text_params(query, True) + range_params + [plan.size]
        else:
            parts.append(
                "SELECT "
                + _COLUMNS.format(a="r", body="r.text", raw="0", ok="1")
                + f" FROM {source} JOIN entries e ON e.row_id = r.row_id"
                " JOIN sessions s ON s.id = e.session_id"
                f" WHERE {match} AND {_SHOWN_ENTRY}{scope_sql}{range_sql}"
            )
            params += dialect.text_params(query, plan.use_index) + scope_params + range_params
        if scope == "instance":
            # Historical channel journals can predate the projection: match their raw JSON.
            range_sql, range_params = _range_sql("e", plan.cursor, plan.lower)
            parts.append(
                "SELECT "
                + _COLUMNS.format(a="e", body="e.payload", raw="1", ok="1")
                + " FROM entries e JOIN sessions s ON s.id = e.session_id"
                f" WHERE NOT e.projected AND {_SHOWN_ENTRY} AND s.kind = 'channel'"
                " AND NOT EXISTS (SELECT 1 FROM search_rows r2 WHERE r2.row_id = e.row_id)"
                f" AND {raw_sql}{range_sql}"
            )
            params += list(patterns) + range_params
    else:
        range_sql, range_params = _range_sql("e", plan.cursor, plan.lower)
        parts.append(
            "SELECT "
            + _COLUMNS.format(a="e", body="e.payload", raw="1", ok="1")
            + " FROM entries e JOIN sessions s ON s.id = e.session_id"
            f" WHERE {_SHOWN_ENTRY} AND {raw_sql}{scope_sql}{range_sql}"
        )
        params += list(patterns) + scope_params + range_params
    if len(parts) == 1:
        alias = "r" if uses_projection(query) else "e"
        sql = parts[0] + f" ORDER BY {alias}.created_at DESC, {alias}.row_id DESC"
    else:
        sql = (
            "SELECT * FROM (" + " UNION ALL ".join(parts) + ") u"
            " ORDER BY u.created_at DESC, u.row_id DESC"
        )
    if plan.size is not None:
        sql += " LIMIT ?"
        params.append(plan.size)
    return sql, params


def _scope_rows(tx: Tx, caller: Caller, scope: str, cap: int) -> int:
    """How many search rows the scope holds, counted up to ``cap``."""
    if scope == "instance":
        row = tx.one("SELECT COUNT(*) FROM (SELECT 1 FROM search_rows LIMIT ?) c", (cap,))
    else:
        scope_sql, scope_params = _scope_sql(scope, caller)
        row = tx.one(
            "SELECT COUNT(*) FROM (SELECT 1 FROM search_rows r JOIN sessions s"
            f" ON s.id = r.session_id WHERE TRUE{scope_sql} LIMIT ?) c",
            [*scope_params, cap],
        )
    return int(row[0]) if row is not None else 0


def _window_boundary(tx: Tx, window: int) -> tuple[Any, int] | None:
    """The key of the ``window``-th newest search row, or ``None`` if there are fewer."""
    row = tx.one(
        "SELECT created_at, row_id FROM search_rows"
        " ORDER BY created_at DESC, row_id DESC LIMIT 1 OFFSET ?",
        (window - 1,),
    )
    return None if row is None else (row[0], int(row[1]))


def _hit(db: Database, row: Row, query: str) -> Hit | None:
    """A hit for a candidate row, or ``None`` when its shown text lacks the query."""
    _, created_at, session_id, seq, body, is_raw, role, title, owner_id, _ = row
    if is_raw:
        try:
            message = json.loads(body)
        except ValueError:
            return None
        if not isinstance(message, dict):
            return None
        text = shown_text(message)
        if find_casefold(text, query) is None:
            return None
    else:
        text = str(body)
    snippet = literal_snippet(text, query, SNIPPET_RADIUS).replace("\x00", "\ufffd")
    return Hit(
        session_id=str(session_id),
        session_title=str(title),
        seq=int(seq),
        role=str(role),
        snippet=snippet,
        ts=micros_to_iso(db.dialect.ts_value(created_at)),
        owner_id=str(owner_id),
    )


def check_scope(caller: Caller, scope: str) -> None:
    if scope not in SCOPES:
        raise QueryError("scope must be account or instance")
    if scope == "instance" and not caller.is_admin:
        raise AccessDenied("only administrators may search the whole instance")


def search_messages(
    db: Database,
    caller: Caller,
    query: str,
    limit: int = 50,
    scope: str = "account",
    *,
    on_page: Callable[[], None] | None = None,
) -> list[Hit]:
    """Messages whose shown text contains ``query`` (case-insensitive), newest first.

    ``on_page`` runs after each candidate query is read; tests use it to interleave
    a concurrent writer with one search.
    """
    check_scope(caller, scope)
    needle = query.strip()
    if utf16_length(needle) < 2 or limit <= 0:
        return []
    limit = min(limit, MAX_LIMIT)
    found = _Found(db, needle, limit)
    projected = uses_projection(needle)
    with db.snapshot() as tx:
        cursor: tuple[Any, int] | None = None
        use_index = True
        if projected:
            first = _first_plan(tx, caller, scope)
            use_index = first.use_index
            if first.lower is not None:
                # The probe: the newest rows by a plain range scan, cheap however common
                # the query is; the trigram index then serves only what is older.
                size = limit
                probe = _Plan(lower=first.lower, size=size, use_index=False)
                rows = tx.all(*_page_query(db, caller, needle, scope, probe))
                found.take(rows)
                if on_page is not None:
                    on_page()
                cursor = first.lower if len(rows) < size else found.cursor
                use_index = True
        while not found.done:
            size = min(PAGE_SIZE, limit - len(found.hits)) if projected else PAGE_SIZE
            plan = _Plan(cursor=cursor, size=size, use_index=use_index)
            rows = tx.all(*_page_query(db, caller, needle, scope, plan))
            found.take(rows)
            cursor = found.cursor
            if on_page is not None:
                on_page()
            if len(rows) < size:
                break
    return found.hits


def _first_plan(tx: Tx, caller: Caller, scope: str) -> _Plan:
    """How to start a projected search.

    A scope of at most ``SMALL_SCOPE`` rows is scanned outright, without the trigram
    index: reading a few thousand rows beats listing every match of a common query
    across the instance (and SQLite would drive any ``MATCH`` from the FTS5 table).
    A larger scope first probes the newest ``PROBE_WINDOW`` rows of the instance by
    range scan (``lower`` is the oldest key of that window); the index then serves
    only what is older.
    """
    if _scope_rows(tx, caller, scope, SMALL_SCOPE + 1) <= SMALL_SCOPE:
        return _Plan(use_index=False)
    boundary = _window_boundary(tx, PROBE_WINDOW)
    if boundary is None:
        return _Plan(use_index=False)
    return _Plan(lower=boundary, use_index=False)


class _Found:
    """Hits accepted so far, the cursor after the last candidate, and the caps."""

    def __init__(self, db: Database, needle: str, limit: int) -> None:
        self.db = db
        self.needle = needle
        self.limit = limit
        self.hits: list[Hit] = []
        self.accepted_raw = 0
        self.cursor: tuple[Any, int] | None = None

    @property
    def done(self) -> bool:
        return len(self.hits) >= self.limit or self.accepted_raw >= RAW_MATCH_CAP

    def take(self, rows: list[Row]) -> None:
        for row in rows:
            if self.done:
                return
            self.cursor = (row[1], int(row[0]))
            if not row[9]:
                continue
            hit = _hit(self.db, row, self.needle)
            if hit is None:
                continue
            self.hits.append(hit)
            if row[5]:
                self.accepted_raw += 1
