"""Issue 29: `convodex server accounts add|list|revoke|rotate` and `server teams …`,
driven like a user would, on both databases (SPEC S6)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from convodex.cli.main import main
from convodex.errors import Unauthorized
from convodex.server import Database, authenticate


def _json(db: Database, *args: str) -> Any:
    result = CliRunner().invoke(main, ["server", *args, "--db", db.url, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _fails(db: Database, *args: str) -> str:
    result = CliRunner().invoke(main, ["server", *args, "--db", db.url])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    return result.output


def test_accounts_are_listed_revoked_and_rotated(db: Database) -> None:
    added = _json(db, "accounts", "add", "carol")
    assert authenticate(db, added["token"]).name == "carol"
    _json(db, "accounts", "add", "dave", "--admin")
    listed = _json(db, "accounts", "list")
    assert listed == [
        {"id": added["id"], "name": "carol", "admin": False, "revoked": False, "teams": []},
        {"id": listed[1]["id"], "name": "dave", "admin": True, "revoked": False, "teams": []},
    ]
    assert added["token"] not in json.dumps(listed)
    rotated = _json(db, "accounts", "rotate", "carol")
    assert rotated["token"] != added["token"]
    with pytest.raises(Unauthorized):
        authenticate(db, added["token"])
    assert authenticate(db, rotated["token"]).id == added["id"]
    assert _json(db, "accounts", "revoke", added["id"]) == {"id": added["id"], "revoked": True}
    with pytest.raises(Unauthorized):
        authenticate(db, rotated["token"])
    assert [a["revoked"] for a in _json(db, "accounts", "list")] == [True, False]
    assert "account not found" in _fails(db, "accounts", "revoke", "nobody")


def test_teams_are_created_and_their_members_added_and_removed(db: Database) -> None:
    _json(db, "accounts", "add", "erin")
    _json(db, "accounts", "add", "frank")
    team = _json(db, "teams", "create", "platform")
    assert team["name"] == "platform" and team["members"] == []
    assert _json(db, "teams", "add", "platform", "erin")["members"] == ["erin"]
    assert _json(db, "teams", "add", "platform", "frank")["members"] == ["erin", "frank"]
    # Adding twice changes nothing.
    assert _json(db, "teams", "add", "platform", "frank")["members"] == ["erin", "frank"]
    assert _json(db, "teams", "remove", "platform", "erin")["members"] == ["frank"]
    assert [a["teams"] for a in _json(db, "accounts", "list")] == [[], ["platform"]]
    assert _json(db, "teams", "list") == [
        {"id": team["id"], "name": "platform", "members": ["frank"]}
    ]
    assert "already exists" in _fails(db, "teams", "create", "platform")
    assert "team not found" in _fails(db, "teams", "add", "nope", "erin")
