"""What ``convodex sync`` stores (server/intake.py) on both databases: a session's
parts go in through the bulk path (COPY on PostgreSQL, a batch of INSERTs on SQLite)
with every awkward value intact, searchable in both modes and read back in order."""

from __future__ import annotations

from typing import Any

from convodex.server import Database, search_messages
from convodex.server.browse import read_session
from convodex.server.intake import STORED, store_part
from convodex.server.ranked import search_ranked
from server_fixtures import People

# What COPY's text format must escape (tab, newline, backslash, a lone \N), quotes a
# tsvector lexeme must escape, NUL (U+FFFD in the projection), CJK and an emoji.
AWKWARD = [
    "tab\there, newline\nthere, backslash \\ and \\N alone",
    "it's a \"quoted\" word: don't 'lexeme'",
    "nul\x00inside the zebrafish text",
    "部署 the service 🚀 today",
    "\\.",  # COPY's end-of-data marker, as a whole line of text
]


def _entries(texts: list[str], start: int) -> list[dict[str, Any]]:
    return [
        {
            "payload": {"role": "user" if n % 2 == 0 else "assistant", "content": text},
            "createdAt": 1_750_000_000_000_000 + (start + n) * 1_000_000,
        }
        for n, text in enumerate(texts)
    ]


def test_parts_store_awkward_values_intact(db: Database, people: People) -> None:
    facts: dict[str, Any] = {
        "machine": "laptop",
        "agent": "claude_code",
        "local_id": "s1",
        "title": "awkward",
        "project": "~/p",
        "team": None,
        "digest": "d1",
    }
    sid, state = store_part(
        db, people.alice, **facts, part=0, final=False, entries=_entries(AWKWARD[:3], 0)
    )
    assert state == STORED
    _, state = store_part(
        db, people.alice, **facts, part=1, final=True, entries=_entries(AWKWARD[3:], 3)
    )
    assert state == STORED
    view = read_session(db, people.alice, sid)
    assert [e.seq for e in view.entries] == [1, 2, 3, 4, 5]
    expected = [t.replace("\x00", "\ufffd") for t in AWKWARD]
    assert [e.text for e in view.entries] == expected
    assert view.entries[0].ts == "2025-06-15T15:06:40.000000Z"
    with db.snapshot() as tx:
        rows = tx.all("SELECT seq, parent_seq FROM entries WHERE session_id = ? ORDER BY 1", (sid,))
    assert rows == [(1, None), (2, 1), (3, 2), (4, 3), (5, 4)]
    assert [h.seq for h in search_ranked(db, people.alice, "zebrafish").hits] == [3]
    assert [h.seq for h in search_ranked(db, people.alice, "lexeme").hits] == [2]
    assert [h.seq for h in search_ranked(db, people.alice, "部署").hits] == [4]
    assert [h.seq for h in search_messages(db, people.alice, "\\N alone", 10)] == [1]
    assert [h.seq for h in search_messages(db, people.alice, "don't 'lex", 10)] == [2]
    # Another account sees none of it.
    assert search_ranked(db, people.bob, "zebrafish").hits == []


def test_a_malformed_upload_is_one_clear_400(db: Database, people: People) -> None:
    """The typed decoding of a sync part: a wrong field, a payload that is no JSON
    object with a role, or one nesting past the body's limit, is a 400 naming what is
    wrong (never a 500, never a value); nothing is stored."""
    import httpx

    from convodex.web.server_app import create_app
    from server.server_helpers import serving

    good = {"machine": "m", "agent": "claude_code", "sessionId": "s", "digest": "d"}
    deep: Any = {"role": "user", "content": "x"}
    for _ in range(70):
        deep = {"role": "user", "content": [deep]}
    cases = [
        ({**good, "entries": "nope"}, "$.entries"),
        ({**good, "machine": 7, "entries": []}, "$.machine"),
        ({**good, "entries": [{"payload": [1], "createdAt": 1}]}, "string role"),
        ({**good, "entries": [{"payload": deep, "createdAt": 1}]}, "nests too deeply"),
        ({**good, "entries": [{"payload": {"role": "user"}, "createdAt": 1, "parent": 5}]},
         "parent must come before it"),
    ]  # fmt: skip
    with serving(create_app(db)) as url, httpx.Client(base_url=url) as http:
        auth = {"Authorization": f"Bearer {people.tokens['alice']}"}
        for body, said in cases:
            answer = http.post("/brain/sync/sessions", json=body, headers=auth)
            assert answer.status_code == 400, answer.text
            assert said in answer.json()["error"]
    with db.snapshot() as tx:
        assert tx.one("SELECT COUNT(*) FROM entries") == (0,)
