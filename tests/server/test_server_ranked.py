"""Issue 29: ranked hub search speaks the local query language (SPEC S6, L12, L13).

`rollback deploy` found nothing in the literal mode (a substring of neither message)
where the local search finds both words; `mode=ranked` finds it, with phrases, OR,
NOT, prefixes, CJK and 1–2 character words, the L13 filters, and the literal mode's
access and branch rules. Over real HTTP on both databases.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from convodex.server import Database, append, create_session, discard, rewrite
from convodex.server import ranked as ranked_module
from convodex.web.server_app import create_app
from server.server_helpers import assistant, serving, set_session_facts, user
from server_fixtures import People

DAY = 86_400_000_000  # microseconds
NOW = 1_770_000_000_000_000  # 2026-02-02, microseconds


@pytest.fixture
def http(db: Database, people: People) -> Iterator[httpx.Client]:
    with (
        serving(create_app(db)) as url,
        httpx.Client(base_url=url, headers=people.auth("alice"), timeout=60) as client,
    ):
        yield client


def _ranked(http: httpx.Client, q: str, **params: str) -> list[dict[str, Any]]:
    response = http.get("/brain/search", params={"q": q, "mode": "ranked", **params})
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


def _snippets(http: httpx.Client, q: str, **params: str) -> list[str]:
    return [h["snippet"] for h in _ranked(http, q, **params)]


@pytest.fixture
def corpus(db: Database, people: People) -> dict[str, str]:
    app = create_session(db, people.alice.id, title="deploys")
    append(db, app, user("we deploy on fridays, then rollback on mondays"), created_at=NOW)
    append(db, app, assistant("the rollback plan is ready"), created_at=NOW + 1)
    append(db, app, user("the ci is red again"), created_at=NOW + 2)
    append(db, app, user("今天部署了新版本"), created_at=NOW + 3)
    set_session_facts(db, app, "laptop", "claude_code", "/home/me/work/app")
    old = create_session(db, people.alice.id, title="old notes")
    append(db, old, user("plan the deployment of the database"), created_at=NOW - 40 * DAY)
    set_session_facts(db, old, "box", "codex", "/srv/db")
    theirs = create_session(db, people.bob.id, title="bob's")
    append(db, theirs, user("bob can deploy and rollback too"), created_at=NOW)
    return {"app": app, "old": old, "theirs": theirs}


def test_ranked_mode_speaks_the_local_query_language(
    http: httpx.Client, corpus: dict[str, str]
) -> None:
    # The example: both words, not adjacent. Literal finds nothing.
    assert http.get("/brain/search", params={"q": "rollback deploy"}).json() == {"hits": []}
    hits = _ranked(http, "rollback deploy")
    assert [h["snippet"] for h in hits] == ["we deploy on fridays, then rollback on mondays"]
    assert {k: hits[0][k] for k in ("machine", "agent", "project", "sessionTitle")} == {
        "machine": "laptop",
        "agent": "claude_code",
        "project": "/home/me/work/app",
        "sessionTitle": "deploys",
    }
    assert set(hits[0]) == {
        "sessionId",
        "sessionTitle",
        "seq",
        "role",
        "snippet",
        "ts",
        "ownerId",
        "machine",
        "agent",
        "project",
        "score",
    }
    assert _snippets(http, '"rollback plan"') == ["the rollback plan is ready"]
    assert _snippets(http, '"plan rollback"') == []
    assert sorted(_snippets(http, "fridays OR ready")) == [
        "the rollback plan is ready",
        "we deploy on fridays, then rollback on mondays",
    ]
    assert _snippets(http, "rollback -plan") == ["we deploy on fridays, then rollback on mondays"]
    assert sorted(_snippets(http, "deploy*")) == [
        "plan the deployment of the database",
        "we deploy on fridays, then rollback on mondays",
    ]
    # 1-2 character words and CJK: bigram phrases and a single character.
    assert _snippets(http, "ci") == ["the ci is red again"]
    assert _snippets(http, "部署") == ["今天部署了新版本"]
    assert _snippets(http, "新版本") == ["今天部署了新版本"]
    assert _snippets(http, "署") == ["今天部署了新版本"]
    assert _snippets(http, "版部") == []
    # Literal stays the default and exactly S3.
    literal = http.get("/brain/search", params={"q": "rollback plan"}).json()["hits"]
    assert [h["snippet"] for h in literal] == ["the rollback plan is ready"]
    assert "machine" not in literal[0]


def test_ranked_filters_and_order(http: httpx.Client, corpus: dict[str, str]) -> None:
    assert _snippets(http, "plan agent:codex") == ["plan the deployment of the database"]
    assert _snippets(http, "plan", agent="claude-code") == ["the rollback plan is ready"]
    assert _snippets(http, "plan project:app") == ["the rollback plan is ready"]
    assert _snippets(http, 'plan project:"/home/me/work"') == ["the rollback plan is ready"]
    assert _snippets(http, "plan", project="/srv/db") == ["plan the deployment of the database"]
    assert _snippets(http, "plan until:2026-01-01") == ["plan the deployment of the database"]
    assert _snippets(http, "plan", since="2026-01-15") == ["the rollback plan is ready"]
    # Better matches first: both words beat one.
    assert _snippets(http, "rollback OR fridays")[0].startswith("we deploy on fridays")
    for bad in ('"unclosed', "-only", "nope:x", "since:yesterdayish plan", "tool:bash plan"):
        response = http.get("/brain/search", params={"q": bad, "mode": "ranked"})
        assert response.status_code == 400, bad
        assert bad not in response.json()["error"]
    assert http.get("/brain/search", params={"q": "x", "mode": "fuzzy"}).status_code == 400


def test_ranked_follows_rewrites_branches_discards_and_access(
    db: Database, people: People, http: httpx.Client, corpus: dict[str, str]
) -> None:
    sid = corpus["app"]
    rewrite(db, sid, 2, assistant("the revert playbook is ready"))
    assert _snippets(http, '"rollback plan"') == []
    assert _snippets(http, "playbook") == ["the revert playbook is ready"]
    discard(db, sid, 3)
    assert _snippets(http, "ci") == []
    append(db, sid, user("a branch about kumquats"), parent_seq=1)
    assert _snippets(http, "kumquats") == ["a branch about kumquats"]
    assert _snippets(http, "playbook") == []  # left the active branch
    # Bob's session is never alice's hit; an administrator finds it in instance scope.
    assert all(h["ownerId"] == people.alice.id for h in _ranked(http, "rollback"))
    admin = {"Authorization": f"Bearer {people.tokens['admin']}"}
    everyone = http.get(
        "/brain/search",
        params={"q": "bob rollback", "mode": "ranked", "scope": "instance"},
        headers=admin,
    ).json()["hits"]
    assert [h["sessionId"] for h in everyone] == [corpus["theirs"]]
    denied = http.get("/brain/search", params={"q": "bob", "mode": "ranked", "scope": "instance"})
    assert denied.status_code == 403


def test_tsvector_text_is_the_general_form_whatever_the_tokens() -> None:
    """The quick path (nothing to escape or cut) writes exactly the text every token
    quoted, escaped and cut would give; quotes, backslashes, long, CJK and empty
    tokens take the general path."""
    import random

    from convodex.server.dialects.postgresql import MAX_POSITION, PostgresDialect, _lexeme

    def general(tokens: list[str]) -> str:
        kept = tokens[:MAX_POSITION]
        return " ".join(f"{_lexeme(t[:500])}:{n}" for n, t in enumerate(kept, 1))

    dialect = PostgresDialect()
    pieces = ["a", "deploy", "'", "\\", "部署", "x" * 600, ":", ""]
    rng = random.Random(29)
    for _ in range(3000):
        tokens = [
            "".join(rng.choices(pieces, k=rng.randint(1, 3))) for _ in range(rng.randint(0, 9))
        ]
        assert dialect.tokens_param(tokens) == general(tokens), tokens
    many = ["w"] * (MAX_POSITION + 10)
    assert dialect.tokens_param(many) == general(many)
    assert dialect.tokens_param(None) is None


def _forget_tokens(db: Database) -> None:
    """The journal as migration 0004 left it: search rows without ranked tokens."""
    with db.write() as tx:
        tx.run("UPDATE entries SET tokens = NULL")


def test_entries_from_before_ranked_search_are_backfilled(
    db: Database, people: People, http: httpx.Client, corpus: dict[str, str]
) -> None:
    from convodex.server.projection import backfill_tokens

    before = _snippets(http, "rollback")
    assert before  # found while every entry has its tokens
    _forget_tokens(db)
    assert _snippets(http, "rollback") == []
    literal = http.get("/brain/search", params={"q": "rollback"}).json()["hits"]
    assert literal  # literal search never needed them
    with db.snapshot() as tx:
        shown = tx.one("SELECT COUNT(*) FROM entries WHERE text IS NOT NULL")
    assert shown is not None
    assert backfill_tokens(db, batch=2) == shown[0]
    assert _snippets(http, "rollback") == before
    assert _snippets(http, "部署") == ["今天部署了新版本"]
    assert backfill_tokens(db) == 0


def test_the_server_backfills_as_it_starts(
    db: Database, people: People, corpus: dict[str, str], tmp_path: Path
) -> None:
    """``convodex server serve`` fills them beside answering, by itself."""
    import time

    from server_fixtures import client_of_server

    _forget_tokens(db)
    with client_of_server(db, people, tmp_path) as (_, http):
        deadline = time.monotonic() + 60
        while len(_snippets(http, "rollback")) < 2:
            assert time.monotonic() < deadline, "the server did not backfill"
            time.sleep(0.05)
        assert sorted(_snippets(http, "rollback")) == [
            "the rollback plan is ready",
            "we deploy on fridays, then rollback on mondays",
        ]


def test_ranked_pages_continue_exactly_with_a_cursor(
    db: Database, people: People, http: httpx.Client
) -> None:
    """Paged with ``cursor``, the hits are the one-page answer in the same order: ties
    in score (the same text) by time, ties in time by row; none twice, none lost."""
    sid = create_session(db, people.alice.id, title="many")
    for n in range(11):
        # Three texts (three scores), some entries at the same moment.
        text = ["deploy", "deploy the deploy", "we deploy it now and then"][n % 3]
        append(db, sid, user(text), created_at=NOW + n // 2)
    whole = http.get("/brain/search", params={"q": "deploy", "mode": "ranked", "limit": "200"})
    assert whole.json()["nextCursor"] is None
    everything = [(h["seq"], h["score"]) for h in whole.json()["hits"]]
    assert len(everything) == 11
    paged: list[tuple[int, float]] = []
    cursor = None
    while True:
        params = {"q": "deploy", "mode": "ranked", "limit": "3"}
        page = http.get(
            "/brain/search", params={**params, **({"cursor": cursor} if cursor else {})}
        )
        assert page.status_code == 200, page.text
        paged += [(h["seq"], h["score"]) for h in page.json()["hits"]]
        cursor = page.json()["nextCursor"]
        if cursor is None:
            break
    assert paged == everything
    bad = http.get("/brain/search", params={"q": "deploy", "mode": "ranked", "cursor": "nope"})
    assert bad.status_code == 400
    assert bad.json()["error"] == "the cursor is not valid"


def test_ranked_ranks_the_newest_candidates_through_any_window(
    db: Database, people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ranked answer is the best of the scope's newest ``RANK_CANDIDATES`` matches
    (an old better match is not read), the same whether the whole index or windows of
    the owner's newest entries (PostgreSQL) supplied them; others' matches never do."""
    mine = create_session(db, people.alice.id, title="mine")
    theirs = create_session(db, people.bob.id, title="theirs")
    for n in range(30):
        text = "deploy deploy deploy" if n < 5 else ("deploy now" if n % 2 else "other words")
        append(db, mine, user(text), created_at=NOW + n)
        append(db, theirs, user("deploy deploy deploy deploy"), created_at=NOW + n)
    monkeypatch.setattr(ranked_module, "RANK_CANDIDATES", 6)
    answers = []
    for window in (10**9, 2, 5):
        monkeypatch.setattr(ranked_module, "RANK_WINDOW", window)
        page = ranked_module.search_ranked(db, people.alice, "deploy", 50)
        answers.append([(h.ts, h.snippet, h.score) for h in page.hits])
    assert answers[1] == answers[0] and answers[2] == answers[0]
    assert [snippet for _, snippet, _ in answers[0]] == ["deploy now"] * 6
    assert [ts for ts, _, _ in answers[0]] == sorted((ts for ts, _, _ in answers[0]), reverse=True)
