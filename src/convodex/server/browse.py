"""Reading the hub back (SPEC S6): ``GET /brain/sessions`` (filters, newest activity
first, an exact keyset cursor) and ``GET /brain/sessions/{id}`` (the effective branch).

The same reach as search: ``account`` lists the caller's own personal sessions,
``team`` those shared with the caller's teams (or the one named), ``instance``
everything (administrators). Reading one session needs its owner, an administrator
or a member of the team it is shared with.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from convodex.errors import AccessDenied, NotFound, QueryError
from convodex.server.accounts import Caller
from convodex.server.db import Database, Tx, micros_to_iso
from convodex.server.inputs import check_id, check_int64
from convodex.server.search import check_scope
from convodex.server.teams import may_read, scope_teams
from convodex.sqlite import marks
from convodex.team_models import HubEntry, HubSession, HubSessionPage, HubSessionView
from convodex.text.shown import shown_text, storable

MAX_PAGE = 200

_COLUMNS = (
    "s.id, s.title, s.owner_id, s.kind, t.name, s.machine, s.agent, s.project,"
    " s.created_at, COALESCE(s.updated_at, s.created_at) AS active_at, s.forked_from,"
    " s.team_id"
)
_FROM = " FROM sessions s LEFT JOIN teams t ON t.id = s.team_id"
_VISIBLE = " WHERE s.fork_state = 'complete' AND s.deleted_at IS NULL"


@dataclass(frozen=True)
class SessionFilters:
    """Filters of the sessions list (L13's meaning, on the hub's session facts)."""

    agent: str | None = None
    project: str | None = None
    machine: str | None = None
    #: microseconds since the epoch, on the session's last activity
    since: int | None = None
    until: int | None = None


def _hub_session(tx: Tx, row: tuple[Any, ...]) -> HubSession:
    return HubSession(
        id=str(row[0]),
        title=str(row[1]),
        owner_id=str(row[2]),
        kind=str(row[3]),
        team=None if row[4] is None else str(row[4]),
        machine=str(row[5]),
        agent=str(row[6]),
        project=str(row[7]),
        created_at=micros_to_iso(tx.dialect.ts_value(row[8])),
        updated_at=micros_to_iso(tx.dialect.ts_value(row[9])),
        forked_from=None if row[10] is None else str(row[10]),
    )


def _encode_cursor(tx: Tx, row: tuple[Any, ...]) -> str:
    raw = json.dumps([tx.dialect.ts_value(row[9]), str(row[0])]).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode_cursor(cursor: str) -> tuple[int, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        micros, session_id = value
        return check_int64(micros, "cursor"), check_id(session_id, "cursor")
    except (ValueError, TypeError, binascii.Error, UnicodeEncodeError):
        raise QueryError("the cursor is not valid") from None


def _scope_filter(
    tx: Tx, caller: Caller, scope: str, team: str | None
) -> tuple[str, list[object]] | None:
    """The scope's condition on ``s``, or ``None`` when it can hold nothing."""
    check_scope(caller, scope, team)
    if scope == "account":
        return " AND s.owner_id = ? AND s.kind = 'personal'", [caller.id]
    if scope == "team":
        teams = scope_teams(tx, caller, team)
        if not teams:
            return None
        return f" AND s.team_id IN ({marks(teams)})", list(teams)
    return "", []


def list_sessions(
    db: Database,
    caller: Caller,
    *,
    scope: str = "account",
    team: str | None = None,
    filters: SessionFilters | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> HubSessionPage:
    """Sessions in reach, newest activity first; every filter applies before paging."""
    wanted = filters or SessionFilters()
    size = max(1, min(limit, MAX_PAGE))
    after = _decode_cursor(cursor) if cursor else None
    with db.snapshot() as tx:
        where = _scope_filter(tx, caller, scope, team)
        if where is None:
            return HubSessionPage(sessions=[], next_cursor=None)
        sql = f"SELECT {_COLUMNS}{_FROM}{_VISIBLE}{where[0]}"
        params: list[object] = list(where[1])
        for column, value in (
            ("s.agent", wanted.agent),
            ("s.project", wanted.project),
            ("s.machine", wanted.machine),
        ):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        active = "COALESCE(s.updated_at, s.created_at)"
        if wanted.since is not None:
            sql += f" AND {active} >= ?"
            params.append(tx.ts(wanted.since))
        if wanted.until is not None:
            sql += f" AND {active} < ?"
            params.append(tx.ts(wanted.until))
        if after is not None:
            sql += f" AND ({active} < ? OR ({active} = ? AND s.id < ?))"
            stamp = tx.ts(after[0])
            params += [stamp, stamp, after[1]]
        sql += f" ORDER BY {active} DESC, s.id DESC LIMIT ?"
        params.append(size + 1)
        rows = tx.all(sql, params)
        more = len(rows) > size
        rows = rows[:size]
        return HubSessionPage(
            sessions=[_hub_session(tx, row) for row in rows],
            next_cursor=_encode_cursor(tx, rows[-1]) if more and rows else None,
        )


def _text(payload: str) -> str:
    try:
        message = json.loads(payload)
    except (ValueError, RecursionError):
        return ""
    return storable(shown_text(message)) if isinstance(message, dict) else ""


def read_session(db: Database, caller: Caller, session_id: str) -> HubSessionView:
    """One session and its effective branch (the chain from its head), in one snapshot."""
    check_id(session_id, "session id")
    with db.snapshot() as tx:
        row = tx.one(f"SELECT {_COLUMNS}{_FROM}{_VISIBLE} AND s.id = ?", (session_id,))
        if row is None:
            raise NotFound("session not found")
        if not may_read(tx, caller, str(row[2]), None if row[11] is None else str(row[11])):
            raise AccessDenied("this session belongs to another account")
        entries = tx.all(
            "SELECT seq, role, created_at, payload FROM entries"
            " WHERE session_id = ? AND on_branch AND NOT discarded ORDER BY seq",
            (session_id,),
        )
        return HubSessionView(
            session=_hub_session(tx, row),
            entries=[
                HubEntry(
                    seq=int(seq),
                    role=str(role),
                    ts=micros_to_iso(tx.dialect.ts_value(created)),
                    text=_text(str(payload)),
                )
                for seq, role, created, payload in entries
            ],
        )
