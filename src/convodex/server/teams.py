"""Teams of accounts (SPEC S6): a session shared with a team is read by its members in
``team`` scope, never by another team's; administrators keep ``instance``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from convodex.errors import AccessDenied, Conflict, NotFound
from convodex.server.accounts import Caller, _account_id
from convodex.server.db import Database, Tx, now_micros
from convodex.server.inputs import check_id


@dataclass(frozen=True)
class TeamInfo:
    """A team and its members' account names."""

    id: str
    name: str
    members: tuple[str, ...]


def create_team(db: Database, name: str) -> TeamInfo:
    check_id(name, "team name")
    team_id = "team_" + uuid.uuid4().hex
    with db.write() as tx:
        if tx.one("SELECT 1 FROM teams WHERE name = ?", (name,)) is not None:
            raise Conflict("a team with this name already exists")
        tx.run(
            "INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)",
            (team_id, name, tx.ts(now_micros())),
        )
    return TeamInfo(team_id, name, ())


def team_id(tx: Tx, name: str) -> str:
    """The id of the team called ``name``."""
    check_id(name, "team name")
    row = tx.one("SELECT id FROM teams WHERE name = ?", (name,))
    if row is None:
        raise NotFound("team not found")
    return str(row[0])


def _info(tx: Tx, tid: str) -> TeamInfo:
    row = tx.one("SELECT name FROM teams WHERE id = ?", (tid,))
    assert row is not None
    members = tx.all(
        "SELECT a.name FROM team_members m JOIN accounts a ON a.id = m.account_id"
        " WHERE m.team_id = ? ORDER BY a.name",
        (tid,),
    )
    return TeamInfo(tid, str(row[0]), tuple(str(m[0]) for m in members))


def add_member(db: Database, team: str, account: str) -> TeamInfo:
    with db.write() as tx:
        tid = team_id(tx, team)
        aid = _account_id(tx, account)
        if (
            tx.one("SELECT 1 FROM team_members WHERE team_id = ? AND account_id = ?", (tid, aid))
            is None
        ):
            tx.run(
                "INSERT INTO team_members (team_id, account_id, added_at) VALUES (?, ?, ?)",
                (tid, aid, tx.ts(now_micros())),
            )
        return _info(tx, tid)


def remove_member(db: Database, team: str, account: str) -> TeamInfo:
    with db.write() as tx:
        tid = team_id(tx, team)
        aid = _account_id(tx, account)
        tx.run("DELETE FROM team_members WHERE team_id = ? AND account_id = ?", (tid, aid))
        return _info(tx, tid)


def list_teams(db: Database) -> list[TeamInfo]:
    with db.snapshot() as tx:
        ids = [str(r[0]) for r in tx.all("SELECT id FROM teams ORDER BY name")]
        return [_info(tx, tid) for tid in ids]


def member_team(tx: Tx, account_id: str, team: str) -> str:
    """The id of team ``team``, which ``account_id`` must belong to (403 otherwise)."""
    tid = team_id(tx, team)
    if (
        tx.one("SELECT 1 FROM team_members WHERE team_id = ? AND account_id = ?", (tid, account_id))
        is None
    ):
        raise AccessDenied("the session's owner is not a member of this team")
    return tid


def member_teams(tx: Tx, caller: Caller) -> list[str]:
    """The ids of the teams ``caller`` belongs to."""
    rows = tx.all("SELECT team_id FROM team_members WHERE account_id = ?", (caller.id,))
    return sorted(str(r[0]) for r in rows)


def scope_teams(tx: Tx, caller: Caller, team: str | None) -> list[str]:
    """The team ids a ``team``-scope read covers: the named team (its members and
    administrators only: 403 otherwise), else every team the caller belongs to."""
    mine = member_teams(tx, caller)
    if team is None:
        return mine
    try:
        tid = team_id(tx, team)
    except NotFound:
        if caller.is_admin:
            raise
        # Whether a team of that name exists is not for outsiders to learn.
        raise AccessDenied("only the team's members may read its sessions") from None
    if tid not in mine and not caller.is_admin:
        raise AccessDenied("only the team's members may read its sessions")
    return [tid]


def may_read(tx: Tx, caller: Caller, owner_id: str, session_team: str | None) -> bool:
    """Whether ``caller`` may read a session: its owner, an administrator, or a member
    of the team it is shared with."""
    if caller.is_admin or caller.id == owner_id:
        return True
    return session_team is not None and session_team in member_teams(tx, caller)
