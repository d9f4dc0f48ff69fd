"""Issue 12, items 14-16: the raw-JSON path of short queries (SPEC S3, S5).

14. A payload stored as ``"\\u0041Z … a\\/b"`` shows ``AZ … a/b``, but ``AZ`` and
    ``a/`` found nothing: every escape form a standard encoder may write must match.
15. The 500 cap bounded accepted hits; the raw candidates examined were unbounded.
    At most 500 are examined per database round trip, continuing by the cursor.
16. Case folding changed at 3 characters: ``ČA`` found ``ČAS``, ``ča`` did not.

Searches go through a real ``convodex server serve`` on both databases; payloads
are stored byte for byte through the Python API, as another encoder wrote them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from convodex.server import Database, append, create_session, search_messages
from server_fixtures import People, client_of_server, db, people, pg_cluster

__all__ = ["db", "people", "pg_cluster"]

ESCAPED = (
    '{"role":"user","content":"\\u0041Z marks a\\/b, \\u010CAS and \\u010das,'
    ' tab\\there, \\ud83c\\uDF89 party, say \\"hi\\" at C:\\\\dir"}'
)
# (A query is trimmed, so a tab can only be inside one of three characters or more.)
RAW_CASES = ("AZ", "az", "a/", "/b", "ča", "ČA", "Ča", "🎉", '"h', "\\d", ":\\")
PROJECTED_CASES = ("AZ m", "a/b", "čas", "ČAS", "Čas", "b\th", "🎉 p", '"hi"', "C:\\d")


@pytest.fixture
def served(db: Database, people: People, tmp_path: Path) -> Iterator[httpx.Client]:
    with client_of_server(db, people, tmp_path) as (_, client):
        yield client


def _snippets(http: httpx.Client, query: str) -> list[str]:
    response = http.get("/brain/search", params={"q": query})
    assert response.status_code == 200
    return [hit["snippet"] for hit in response.json()["hits"]]


def _seqs(http: httpx.Client, query: str) -> list[int]:
    response = http.get("/brain/search", params={"q": query})
    assert response.status_code == 200
    return [hit["seq"] for hit in response.json()["hits"]]


@pytest.mark.parametrize("kind", ["raw path (< 3 code points)", "projected path"])
def test_every_json_escape_form_is_found(
    db: Database, people: People, served: httpx.Client, kind: str
) -> None:
    sid = create_session(db, people.alice.id, title="escapes")
    append(db, sid, ESCAPED)
    append(db, sid, {"role": "user", "content": "unrelated words"})
    for query in RAW_CASES if kind.startswith("raw") else PROJECTED_CASES:
        assert _seqs(served, query) == [1], query
    # An escape sequence's own letters are not shown text.
    for decoy in ("u0", "5C", "DF", "\\/"):
        assert _seqs(served, decoy) == [], decoy


def test_case_folds_the_same_at_two_and_three_characters(
    db: Database, people: People, served: httpx.Client
) -> None:
    sid = create_session(db, people.alice.id, title="case")
    append(db, sid, {"role": "user", "content": "ČAS JE ZLATO"})
    append(db, sid, '{"role":"user","content":"\\u010das je zlato"}')
    append(db, sid, {"role": "assistant", "content": [{"type": "text", "text": "Kelvin K"}]})
    expected = ["čas je zlato", "ČAS JE ZLATO"]
    for query in ("ča", "ČA", "Ča", "čA", "čas", "ČAS", "Čas", "čaS"):
        assert _snippets(served, query) == expected, query
    for query in ("in k", "ke", "KE", "k"):
        # "k" alone is too short (fewer than 2 code units) and finds nothing.
        assert _snippets(served, query) == ([] if query == "k" else ["Kelvin K"]), query


def test_at_most_500_raw_candidates_are_examined_per_round_trip(
    db: Database, people: People, served: httpx.Client
) -> None:
    sid = create_session(db, people.alice.id, title="deep")
    append(db, sid, {"role": "user", "content": "the oldest q7 answer"}, created_at=1)
    for i in range(1_240):
        # Shown entries whose raw JSON never contains the query.
        append(db, sid, {"role": "user", "content": f"filler {i}"}, created_at=10 + i)
    round_trips: list[int] = []
    hits = search_messages(db, people.alice, "q7", on_page=lambda: round_trips.append(1))
    assert [h.snippet for h in hits] == ["the oldest q7 answer"]
    # 1,241 candidates in windows of at most 500: the database examined them in at
    # least three round trips, each continuing where the last stopped.
    assert len(round_trips) >= 3
    # "ro" is in every payload ("role") but in no shown text except one (the newest:
    # a search accepts at most 500 raw matches in all, see the test below).
    append(db, sid, {"role": "user", "content": "a rook"}, created_at=5_000)
    assert _snippets(served, "ro") == ["a rook"]
    assert _snippets(served, "q7") == ["the oldest q7 answer"]


def test_at_most_500_raw_matches_are_accepted_per_search_in_total(
    db: Database, people: People, served: httpx.Client
) -> None:
    """Issue 29: the cap of 500 raw matches held per round trip only (one search
    examined 2,000 raw matches over 15 round trips). It holds for the whole search."""
    sid = create_session(db, people.alice.id, title="deep")
    append(db, sid, {"role": "user", "content": "the oldest qz answer"}, created_at=1)
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"cmd": "echo qz"}}
    for i in range(499):
        # Raw matches ("qz" is in the tool call's arguments) that show nothing.
        append(db, sid, {"role": "assistant", "content": [call]}, created_at=10 + i)
    # 499 raw matches newer than the answer, then the answer: the 500th is accepted.
    assert _snippets(served, "qz") == ["the oldest qz answer"]
    for i in range(2):
        append(db, sid, {"role": "assistant", "content": [call]}, created_at=1_000 + i)
    # Now the answer would be the 502nd raw match of one search: it is never examined,
    # however many round trips the search would take.
    round_trips: list[int] = []
    assert search_messages(db, people.alice, "qz", on_page=lambda: round_trips.append(1)) == []
    assert len(round_trips) <= 2
    # The projected path is unaffected: it reads no raw JSON in account scope.
    assert [h.snippet for h in search_messages(db, people.alice, "qz answer")] == [
        "the oldest qz answer"
    ]
