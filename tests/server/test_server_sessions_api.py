"""Issue 29: `GET /brain/sessions` (filters, newest activity first, cursor) and
`GET /brain/sessions/{id}` (the effective branch), SPEC S6, over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from convodex.server import Database, append, create_session, fork
from convodex.server.journal import discard
from convodex.web.server_app import create_app
from server.server_helpers import assistant, serving, set_session_facts, tool_call, user
from server_fixtures import People

DAY = 86_400_000_000  # microseconds


@pytest.fixture
def http(db: Database, people: People) -> Iterator[httpx.Client]:
    with (
        serving(create_app(db)) as url,
        httpx.Client(base_url=url, headers=people.auth("alice"), timeout=60) as client,
    ):
        yield client


def test_sessions_list_newest_first_with_filters_and_an_exact_cursor(
    db: Database, people: People, http: httpx.Client
) -> None:
    made: list[str] = []
    for n in range(7):
        sid = create_session(db, people.alice.id, title=f"s{n}", created_at=n)
        append(db, sid, user(f"hello {n}"), created_at=(10 + n) * DAY)
        set_session_facts(
            db, sid, "laptop" if n % 2 else "box", "codex" if n < 4 else "claude", "/w/app"
        )
        made.append(sid)
    other = create_session(db, people.bob.id, title="bob's")
    append(db, other, user("not alice's"))
    seen: list[str] = []
    cursor: str | None = None
    while True:
        params = {"limit": "3"} | ({"cursor": cursor} if cursor else {})
        page = http.get("/brain/sessions", params=params).json()
        seen += [s["title"] for s in page["sessions"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == [f"s{n}" for n in reversed(range(7))]

    def by(**params: str) -> list[str]:
        listed = http.get("/brain/sessions", params=params).json()["sessions"]
        return [s["title"] for s in listed]

    assert by(machine="laptop") == ["s5", "s3", "s1"]
    assert by(agent="codex", machine="box") == ["s2", "s0"]
    assert by(since="1970-01-15", until="1970-01-16T00:00:00+00:00") == ["s4"]
    first = http.get("/brain/sessions", params={"limit": "1"}).json()["sessions"][0]
    assert first == {
        "id": made[6],
        "title": "s6",
        "ownerId": people.alice.id,
        "kind": "personal",
        "team": None,
        "machine": "box",
        "agent": "claude",
        "project": "/w/app",
        "createdAt": "1970-01-01T00:00:00.000006Z",
        "updatedAt": "1970-01-17T00:00:00.000000Z",
        "forkedFrom": None,
    }
    bad = http.get("/brain/sessions", params={"cursor": "not-a-cursor"})
    assert bad.status_code == 400 and bad.json()["error"] == "the cursor is not valid"
    assert http.get("/brain/sessions", params={"since": "yesterday-ish"}).status_code == 400


def test_a_session_reads_back_as_its_effective_branch(
    db: Database, people: People, http: httpx.Client
) -> None:
    sid = create_session(db, people.alice.id, title="branchy")
    one = append(db, sid, user("first question"))
    append(db, sid, assistant("an answer that was replaced"))
    append(db, sid, tool_call("ls"))
    hidden = append(db, sid, user("discarded words"), parent_seq=one)
    discard(db, sid, hidden)
    append(db, sid, assistant("the answer kept"))
    view = http.get(f"/brain/sessions/{sid}").json()
    assert view["session"]["title"] == "branchy"
    assert [(e["seq"], e["role"], e["text"]) for e in view["entries"]] == [
        (1, "user", "first question"),
        (5, "assistant", "the answer kept"),
    ]
    copy = fork(db, sid, caller=people.alice)
    assert http.get(f"/brain/sessions/{copy}").json()["session"]["forkedFrom"] == sid
    assert http.get("/brain/sessions/nope").status_code == 404
    theirs = create_session(db, people.bob.id)
    assert http.get(f"/brain/sessions/{theirs}").status_code == 403
