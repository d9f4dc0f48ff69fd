"""Browsing without words (SPEC L17): sessions newest first, with every filter.

``recent`` answers "what did I do yesterday in this project": the catalog's sessions
(one a source, as the tree lists them) ordered by last activity, filtered inside SQL
by the same filters a search takes (agent, project, since/until on the session's
activity, session, tool: sessions that called it, sub-agents left out unless asked),
paged by an exact keyset cursor or by page number. A query of qualifiers only means
the same on every surface. Titles come from the sources, as hits' do.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import msgspec

from convodex import config
from convodex.catalog.db import Catalog
from convodex.catalog.hits import Hydrator, RuntimeState
from convodex.catalog.plan import SearchRequest, filters, plan_key
from convodex.catalog.progress import progress, root_ids_for
from convodex.catalog.rowids import TABLES
from convodex.errors import QueryError
from convodex.models import RecentPage, RecentSession, SearchPage
from convodex.sqlite import marks
from convodex.text.agents import agent_label
from convodex.text.query import browse_qualifiers, tool_expression

CURSOR_KIND = "recent"
_COLUMNS = "id, session_id, format, workspace, first_activity_at, last_activity_at, "
_COLUMNS += "message_count, subagent, path"
# A source without a known activity sorts last (as the oldest).
_ORDER_KEY = "coalesce(last_activity_at, -1)"


def is_browse(request: SearchRequest) -> bool:
    """Whether a request holds no words: it lists sessions instead of searching."""
    return browse_qualifiers(request.query) is not None


def as_search_page(listing: RecentPage) -> SearchPage:
    """A listing as the page a search of no words answers: its sessions, no hits."""
    return SearchPage(
        hits=[],
        next_cursor=listing.next_cursor,
        revision=listing.progress.revision,
        stale_cursor=False,
        subagent_hits=False,
        progress=listing.progress,
        sessions=listing.sessions,
    )


def recent(catalog: Catalog, request: SearchRequest, runtime: RuntimeState) -> RecentPage:
    """One page of sessions newest first; bad values are one ``QueryError``."""
    given = browse_qualifiers(request.query)
    if given is None:
        raise QueryError("a listing takes filters only (agent:, project:, since: …), no words")
    limit = config.search_limit(request.limit)
    found = filters(catalog, request, given)
    where, params = list(found.where), list(found.params)
    if not request.include_subagents:
        where.append("subagent = 0")
    if found.session_keys:
        where.append(f"session_id IN ({marks(found.session_keys)})")
        params.extend(found.session_keys)
    if found.tools:
        used = []
        for table in ("documents", "outputs"):
            slot = TABLES[table].slot_sql("rowid")
            used.append(
                f"SELECT slot FROM slots WHERE slot IN "
                f"(SELECT {slot} FROM {table} WHERE {table} MATCH ?)"
            )
            params.append(tool_expression(found.tools))
        where.append(f"id IN (SELECT source_id FROM slots WHERE slot IN ({' UNION '.join(used)}))")
    raw = msgspec.json.encode([CURSOR_KIND, request.include_subagents, *found.key_parts()])
    key = plan_key(raw)
    offset = 0
    if request.cursor:
        last, source_id = _decode(request.cursor, key)
        where.append(f"({_ORDER_KEY} < ? OR ({_ORDER_KEY} = ? AND id < ?))")
        params.extend([last, last, source_id])
    elif request.page is not None:
        if request.page < 1:
            raise QueryError("page must be 1 or more")
        offset = (request.page - 1) * limit
    sql = f"SELECT {_COLUMNS} FROM sources"
    if where:
        sql += " WHERE " + " AND ".join(f"({w})" for w in where)
    sql += f" ORDER BY {_ORDER_KEY} DESC, id DESC LIMIT ? OFFSET ?"
    rows = catalog.db.execute(sql, [*params, limit + 1, offset]).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    sessions = _sessions(catalog, rows, runtime)
    next_cursor = None
    if more and rows:
        tail = rows[-1]
        next_cursor = _encode(key, -1 if tail[5] is None else int(tail[5]), int(tail[0]))
    return RecentPage(
        sessions=sessions,
        next_cursor=next_cursor,
        progress=progress(catalog, root_ids_for(catalog, request.roots)),
    )


def listed_sessions(
    catalog: Catalog, source_ids: Sequence[int], runtime: RuntimeState
) -> dict[int, RecentSession]:
    """These sources as listed sessions (``similar``'s answer), by source id."""
    if not source_ids:
        return {}
    rows = catalog.db.execute(
        f"SELECT {_COLUMNS} FROM sources WHERE id IN ({marks(source_ids)})", list(source_ids)
    ).fetchall()
    return dict(zip((int(r[0]) for r in rows), _sessions(catalog, rows, runtime), strict=True))


def _sessions(catalog: Catalog, rows: list[Any], runtime: RuntimeState) -> list[RecentSession]:
    hydrator = Hydrator(catalog, runtime)
    out = []
    try:
        for source_id, session_id, fmt, workspace, first, last, count, sub, path in rows:
            src = hydrator.source(int(source_id))
            title = None if src is None else hydrator.session_title(src)
            out.append(
                RecentSession(
                    session_id=session_id,
                    session_title=title or session_id,
                    agent=agent_label(fmt),
                    project=workspace,
                    first_activity_at=first,
                    last_activity_at=last,
                    message_count=int(count),
                    subagent=bool(sub),
                    ref=session_id,
                    session_path=path,
                    resume_command=hydrator.resume_command(fmt, session_id, workspace),
                )
            )
    finally:
        hydrator.queue_changed()  # a file changed since indexing goes back in the queue
    return out


def _encode(key: str, last: int, source_id: int) -> str:
    raw = msgspec.json.encode([CURSOR_KIND, key, last, source_id])
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode(cursor: str, key: str) -> tuple[int, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        kind, found, last, source_id = msgspec.json.decode(
            base64.urlsafe_b64decode(padded.encode("ascii"))
        )
        if kind != CURSOR_KIND:
            raise ValueError("not a listing's cursor")
    except (ValueError, TypeError, msgspec.DecodeError, UnicodeError) as exc:
        raise QueryError("invalid cursor") from exc
    if found != key:
        raise QueryError("cursor belongs to a different listing (its filters)")
    return int(last), int(source_id)
