"""Browsing without words (SPEC L17): sessions newest first, with every filter.

``recent`` answers "what did I do yesterday in this project": the catalog's sessions
(as search groups them: a source's own, and each one a file of many holds on its
messages, ``messages.session_key``: an Aider history's runs, a chat export's
conversations, each with its own dates) ordered by last activity, filtered inside SQL
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
from convodex.catalog.rowids import ADDRESSES, TABLES
from convodex.errors import QueryError
from convodex.models import RecentPage, RecentSession, SearchPage
from convodex.sqlite import marks
from convodex.text.agents import agent_label
from convodex.text.query import browse_qualifiers, tool_expression

CURSOR_KIND = "recent"
_SLOT = ADDRESSES.slot_sql("m.base")
_SUB = ADDRESSES.subagent_sql("m.base")
# Every listed session: a source's own (its messages that name no other session), and
# each session a file of many holds (its messages' ``session_key``; the messages_keyed
# index holds exactly those). A key that is another source's own session (a resumed
# Claude Code file carries the earlier session's records) is that source's row; a key
# in several files is listed once, by its newest file (the one a ref resolves to).
_LISTED = f"""WITH keyed AS (
    SELECT s.source_id AS id, m.session_key AS key,
        coalesce(min(CASE WHEN m.timed THEN m.at END), min(m.at)) AS first_at,
        coalesce(max(CASE WHEN m.timed THEN m.at END), max(m.at)) AS last_at,
        count(DISTINCT m.message) AS n, min(m.message) AS opening, max({_SUB} != 0) AS sub
    FROM messages AS m JOIN slots AS s ON s.slot = {_SLOT}
    WHERE m.session_key IS NOT NULL
    GROUP BY s.source_id, m.session_key
), parted AS (
    SELECT * FROM keyed WHERE key NOT IN (SELECT session_id FROM sources)
), runs AS (
    SELECT *, row_number() OVER (PARTITION BY key ORDER BY last_at DESC, id) AS place
    FROM parted
), listed AS (
    SELECT f.id, NULL AS key, f.session_id, f.format, f.workspace, f.root_id,
        f.first_activity_at, f.last_activity_at, f.message_count - coalesce(p.n, 0)
        AS message_count, f.subagent, f.path, NULL AS opening
    FROM sources AS f LEFT JOIN (SELECT id, sum(n) AS n FROM parted GROUP BY id) AS p
        ON p.id = f.id
    WHERE p.n IS NULL OR f.message_count > p.n
    UNION ALL
    SELECT r.id, r.key, r.key, f.format, f.workspace, f.root_id, r.first_at, r.last_at,
        r.n, max(f.subagent, r.sub), f.path, r.opening
    FROM runs AS r JOIN sources AS f ON f.id = r.id WHERE r.place = 1
)"""
_COLUMNS = "id, session_id, format, workspace, first_activity_at, last_activity_at, "
_COLUMNS += "message_count, subagent, path, key, opening"
# A source without a known activity sorts last (as the oldest).
_ORDER_KEY = "coalesce(last_activity_at, -1)"
_KEY = "coalesce(key, '')"


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
        last, source_id, session_key = _decode(request.cursor, key)
        where.append(
            f"({_ORDER_KEY} < ? OR ({_ORDER_KEY} = ? AND (id < ? OR (id = ? AND {_KEY} < ?))))"
        )
        params.extend([last, last, source_id, source_id, session_key])
    elif request.page is not None:
        if request.page < 1:
            raise QueryError("page must be 1 or more")
        offset = (request.page - 1) * limit
    sql = f"{_LISTED} SELECT {_COLUMNS} FROM listed"
    if where:
        sql += " WHERE " + " AND ".join(f"({w})" for w in where)
    sql += f" ORDER BY {_ORDER_KEY} DESC, id DESC, {_KEY} DESC LIMIT ? OFFSET ?"
    rows = catalog.db.execute(sql, [*params, limit + 1, offset]).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    sessions = _sessions(catalog, rows, runtime)
    next_cursor = None
    if more and rows:
        tail = rows[-1]
        last = -1 if tail[5] is None else int(tail[5])
        next_cursor = _encode(key, last, int(tail[0]), tail[9] or "")
    return RecentPage(
        sessions=sessions,
        next_cursor=next_cursor,
        progress=progress(catalog, root_ids_for(catalog, request.roots)),
    )


def listed_sessions(
    catalog: Catalog, source_ids: Sequence[int], runtime: RuntimeState
) -> dict[int, RecentSession]:
    """These sources as listed sessions (``similar``'s answer, which compares whole
    sources: a file of many is one, its whole), by source id."""
    if not source_ids:
        return {}
    whole = _COLUMNS.replace("key, opening", "NULL, NULL")
    rows = catalog.db.execute(
        f"SELECT {whole} FROM sources WHERE id IN ({marks(source_ids)})", list(source_ids)
    ).fetchall()
    return dict(zip((int(r[0]) for r in rows), _sessions(catalog, rows, runtime), strict=True))


def _sessions(catalog: Catalog, rows: list[Any], runtime: RuntimeState) -> list[RecentSession]:
    hydrator = Hydrator(catalog, runtime)
    out = []
    try:
        for source_id, session_id, fmt, workspace, first, last, count, sub, path, key, at in rows:
            src = hydrator.source(int(source_id))
            title = None
            if src is not None and key is None:
                title = hydrator.session_title(src)
            elif src is not None:  # a session inside a file of many: its first message's
                opening = hydrator.load(src, int(at))
                title = None if opening is None else hydrator.title(src, opening)
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
                    opening_index=0 if at is None else int(at),
                    resume_command=hydrator.resume_command(fmt, session_id, workspace),
                )
            )
    finally:
        hydrator.queue_changed()  # a file changed since indexing goes back in the queue
    return out


def _encode(key: str, last: int, source_id: int, session_key: str) -> str:
    raw = msgspec.json.encode([CURSOR_KIND, key, last, source_id, session_key])
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode(cursor: str, key: str) -> tuple[int, int, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        kind, found, last, source_id, session_key = msgspec.json.decode(
            base64.urlsafe_b64decode(padded.encode("ascii"))
        )
        if kind != CURSOR_KIND:
            raise ValueError("not a listing's cursor")
    except (ValueError, TypeError, msgspec.DecodeError, UnicodeError) as exc:
        raise QueryError("invalid cursor") from exc
    if found != key:
        raise QueryError("cursor belongs to a different listing (its filters)")
    return int(last), int(source_id), str(session_key)
