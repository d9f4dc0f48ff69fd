"""Issue 29: who reads what on a team hub (SPEC S4, S6).

3 teams of 3 accounts and an administrator; every account owns a private session
and one shared with its team; the administrator owns a channel. Every caller asks
every read route (long and short queries in both search modes, the sessions list, every
session's read) in every scope it may name: the answers are exactly what the rules
allow (0 leaks, nothing missing), and what they forbid is 403.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from convodex.server import Database, add_account, append, create_session
from convodex.server.teams import add_member, create_team
from convodex.web.server_app import create_app
from server.server_helpers import serving, user

TEAMS = ("red", "green", "blue")


@dataclass(frozen=True)
class Hub:
    url: str
    #: account name -> (token, team or None for the administrator)
    accounts: dict[str, tuple[str, str | None]]
    #: session id -> (owner name, team it is shared with or None, kind)
    sessions: dict[str, tuple[str, str | None, str]]


@pytest.fixture
def hub(db: Database) -> Iterator[Hub]:
    accounts: dict[str, tuple[str, str | None]] = {}
    sessions: dict[str, tuple[str, str | None, str]] = {}
    admin = add_account(db, "root", is_admin=True)
    accounts["root"] = (admin.token, None)
    for team in TEAMS:
        create_team(db, team)
        for n in range(3):
            name = f"{team}{n}"
            account = add_account(db, name)
            add_member(db, team, name)
            accounts[name] = (account.token, team)
            for shared in (None, team):
                sid = create_session(
                    db, account.id, title=f"{name} {shared or 'private'}", team=shared
                )
                append(db, sid, user(f"matrixword zk from {sid}"))
                sessions[sid] = (name, shared, "personal")
    channel = create_session(db, admin.id, kind="channel", title="all hands")
    append(db, channel, user(f"matrixword zk from {channel}"))
    sessions[channel] = ("root", None, "channel")
    with serving(create_app(db)) as url:
        yield Hub(url, accounts, sessions)


def _allowed(hub: Hub, caller: str, scope: str, team: str | None) -> set[str] | None:
    """The sessions a search or listing in this scope must show; None: 403."""
    mine = hub.accounts[caller][1]
    is_admin = mine is None
    if scope == "instance":
        return set(hub.sessions) if is_admin else None
    if scope == "account":
        return {s for s, (o, _, kind) in hub.sessions.items() if o == caller and kind == "personal"}
    if team is not None and team != mine and not is_admin:
        return None
    wanted = {team} if team is not None else ({mine} if mine else set())
    return {s for s, (_, shared, _) in hub.sessions.items() if shared in wanted}


def _may_read(hub: Hub, caller: str, sid: str) -> bool:
    owner, shared, _ = hub.sessions[sid]
    mine = hub.accounts[caller][1]
    return mine is None or owner == caller or (shared is not None and shared == mine)


def test_every_read_route_shows_exactly_what_the_scope_allows(hub: Hub) -> None:
    checked = 0
    with httpx.Client(base_url=hub.url, timeout=60) as http:
        for caller, (token, _) in hub.accounts.items():
            auth = {"Authorization": f"Bearer {token}"}
            scopes: list[tuple[str, str | None]] = [("account", None), ("team", None)]
            scopes += [("team", team) for team in TEAMS] + [("instance", None)]
            for scope, team in scopes:
                expected = _allowed(hub, caller, scope, team)
                params = {"scope": scope, "limit": "200"} | ({"team": team} if team else {})
                for query, mode in itertools.product(("matrixword", "zk"), ("literal", "ranked")):
                    asked = {**params, "q": query, "mode": mode}
                    response = http.get("/brain/search", params=asked, headers=auth)
                    checked += 1
                    if expected is None:
                        assert response.status_code == 403, (caller, scope, team)
                        continue
                    assert response.status_code == 200, (caller, scope, team)
                    found = {h["sessionId"] for h in response.json()["hits"]}
                    assert found == expected, (caller, scope, team, query, mode)
                listing = http.get("/brain/sessions", params=params, headers=auth)
                checked += 1
                if expected is None:
                    assert listing.status_code == 403, (caller, scope, team)
                    continue
                assert listing.status_code == 200
                listed = {s["id"] for s in listing.json()["sessions"]}
                assert listed == expected, (caller, scope, team)
            for sid in hub.sessions:
                read = http.get(f"/brain/sessions/{sid}", headers=auth)
                if _may_read(hub, caller, sid):
                    assert read.status_code == 200, (caller, sid)
                    assert [e["text"] for e in read.json()["entries"]] == [
                        f"matrixword zk from {sid}"
                    ]
                else:
                    assert read.status_code == 403, (caller, sid)
                    assert "matrixword" not in read.text
                checked += 1
        # No token, a bad token: 401 on every route.
        for path in ("/brain/search?q=matrixword", "/brain/sessions", f"/brain/sessions/{sid}"):
            assert http.get(path).status_code == 401
            assert http.get(path, headers={"Authorization": "Bearer cdx_nope"}).status_code == 401
    # 10 callers x 6 scopes x 5 routes (2 queries x 2 modes, the list), and 10 callers
    # x 19 session reads.
    assert checked == 10 * 6 * 5 + 10 * 19


def test_a_revoked_token_is_refused_and_a_rotated_one_replaces_it(db: Database, hub: Hub) -> None:
    from convodex.server.accounts import revoke_account, rotate_token

    old = {"Authorization": f"Bearer {hub.accounts['red0'][0]}"}
    with httpx.Client(base_url=hub.url, timeout=60) as http:
        assert http.get("/brain/sessions", headers=old).status_code == 200
        rotated = rotate_token(db, "red0")
        assert http.get("/brain/sessions", headers=old).status_code == 401
        new = {"Authorization": f"Bearer {rotated.token}"}
        assert len(http.get("/brain/sessions", headers=new).json()["sessions"]) == 2
        revoke_account(db, "red0")
        assert http.get("/brain/sessions", headers=new).status_code == 401
        # Its sessions stay: the team still reads the one shared with it.
        mate = {"Authorization": f"Bearer {hub.accounts['red1'][0]}"}
        titles = {
            s["title"]
            for s in http.get("/brain/sessions", params={"scope": "team"}, headers=mate).json()[
                "sessions"
            ]
        }
        assert "red0 red" in titles
