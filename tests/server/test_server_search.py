"""S3: the literal search contract, on both backends."""

from __future__ import annotations

import pytest

from convodex.models import to_builtins
from convodex.server import Database, append, create_session, search_messages
from convodex.server import search as search_module
from convodex.server.search import MAX_LIMIT
from server.server_helpers import assistant, tool_call, user
from server_fixtures import People

pytestmark = pytest.mark.usefixtures("tuning")


def _session(db: Database, people: People, *texts: str, title: str = "notes") -> str:
    sid = create_session(db, people.alice.id, title=title)
    for text in texts:
        append(db, sid, user(text))
    return sid


def _snippets(db: Database, people: People, query: str, limit: int = 50) -> list[str]:
    return [hit.snippet for hit in search_messages(db, people.alice, query, limit)]


@pytest.mark.parametrize(
    ("query", "wanted", "decoys"),
    [
        ("100%", "costs 100% more", ["costs 100 more", "costs 1000 more"]),
        ("a_c", "call a_c now", ["call abc now", "call a c now"]),
        ("a\\b", "path a\\b here", ["path ab here", "path a/b here"]),
        ('"hi"', 'she said "hi" twice', ["she said hi twice", "she said 'hi' twice"]),
        ("%_", "odd %_ token", ["odd %x token", "odd a_ token"]),
        ('"h', 'quote "here', ["quote here", "quote 'here"]),
        ("\\n", "literal \\n escape", ["real\nnewline"]),
    ],
)
def test_special_characters_are_literal(
    db: Database, people: People, query: str, wanted: str, decoys: list[str]
) -> None:
    _session(db, people, wanted, *decoys)
    assert _snippets(db, people, query) == [wanted]


def test_too_short_queries_and_nonpositive_limits_find_nothing(
    db: Database, people: People
) -> None:
    _session(db, people, "x marks the spot", "ok then", "  ")
    assert _snippets(db, people, "x") == []
    assert _snippets(db, people, "   x   ") == []
    assert _snippets(db, people, "") == []
    assert _snippets(db, people, "ok", limit=0) == []
    assert _snippets(db, people, "ok", limit=-5) == []


def test_two_code_unit_queries_use_raw_json_and_shown_text(db: Database, people: People) -> None:
    sid = _session(db, people, "ok then", "OK!")
    append(db, sid, tool_call("echo ok"))
    # Every payload contains "ro" (from "role") but shown text decides.
    assert _snippets(db, people, "ok") == ["OK!", "ok then"]
    assert _snippets(db, people, "ro") == []


def test_one_emoji_is_two_code_units_and_is_found_in_either_json_encoding(
    db: Database, people: People
) -> None:
    sid = _session(db, people, "party 🎉 time")
    append(db, sid, '{"role":"user","content":"escaped \\ud83c\\udf89 form"}')
    assert _snippets(db, people, "🎉") == ["escaped 🎉 form", "party 🎉 time"]


def test_three_character_queries_use_the_projection(db: Database, people: People) -> None:
    sid = _session(db, people, "the zoo opens", "zo o")
    append(db, sid, tool_call("zoo --feed"))
    assert _snippets(db, people, "zoo") == ["the zoo opens"]


def test_nul_queries_match_the_original_text(db: Database, people: People) -> None:
    sid = _session(db, people)
    append(db, sid, '{"role":"user","content":"before\\u0000after"}')
    assert _snippets(db, people, "e\x00a") == ["before\ufffdafter"]
    assert _snippets(db, people, "before\x00after") == ["before\ufffdafter"]
    assert _snippets(db, people, "e\x00x") == []


def test_think_blocks_and_tool_call_arguments_are_not_searchable(
    db: Database, people: People
) -> None:
    sid = _session(db, people)
    append(db, sid, assistant("<think>secretword plan</think>The visible answer"))
    append(db, sid, tool_call("grep needleword src"))
    assert _snippets(db, people, "secretword") == []
    assert _snippets(db, people, "needleword") == []
    assert _snippets(db, people, "ed") == []
    assert _snippets(db, people, "visible") == ["The visible answer"]


def test_non_ascii_case_folding_on_the_projected_path(db: Database, people: People) -> None:
    _session(db, people, "Čas je zlato", "ČAS JE", "cas je")
    assert _snippets(db, people, "čas") == ["ČAS JE", "Čas je zlato"]
    assert _snippets(db, people, "ČAS") == ["ČAS JE", "Čas je zlato"]


def test_snippets_keep_sixty_characters_either_side(db: Database, people: People) -> None:
    left = "a" * 100
    right = "b" * 100
    _session(db, people, f"{left} needle {right}", "start  \n\n needle\tat   the\nend")
    first, second = _snippets(db, people, "needle")
    assert first == "start needle at the end"
    assert second == "…" + "a" * 59 + " needle " + "b" * 59 + "…"
    _session(db, people, "x" * 70 + "tailword")
    assert _snippets(db, people, "tailword") == ["…" + "x" * 60 + "tailword"]


def test_newest_first_with_ties_broken_by_row_id(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id, title="ties")
    same = 1_700_000_000_000_000
    append(db, sid, user("tie one"), created_at=same)
    append(db, sid, user("tie two"), created_at=same)
    append(db, sid, user("tie three"), created_at=same)
    append(db, sid, user("tie zero"), created_at=same - 1)
    append(db, sid, user("tie later"), created_at=same + 1)
    hits = search_messages(db, people.alice, "tie")
    assert [h.snippet for h in hits] == ["tie later", "tie three", "tie two", "tie one", "tie zero"]
    assert hits[0].ts == "2023-11-14T22:13:20.000001Z"
    assert to_builtins(hits[0]) == {
        "sessionId": sid,
        "sessionTitle": "ties",
        "seq": 5,
        "role": "user",
        "snippet": "tie later",
        "ts": "2023-11-14T22:13:20.000001Z",
        "ownerId": people.alice.id,
    }


def test_limits_are_capped(db: Database, people: People) -> None:
    _session(db, people, *[f"capword {i}" for i in range(MAX_LIMIT + 5)])
    assert len(search_messages(db, people.alice, "capword", 3)) == 3
    assert len(search_messages(db, people.alice, "capword", 10_000)) == MAX_LIMIT
    # The raw JSON path accepts at most 500 matches too.
    assert len(search_messages(db, people.alice, "pw", 10_000)) == 500


def test_old_matches_behind_many_newer_non_matching_candidates_are_found(
    db: Database, people: People
) -> None:
    sid = create_session(db, people.alice.id, title="deep")
    append(db, sid, user("the old qq answer"), created_at=1)
    for i in range(420):
        # The raw JSON matches "qq" but nothing shown does (fewer than the 500 raw
        # matches one search accepts in all).
        append(db, sid, tool_call(f"echo qq {i}"), created_at=10 + i)
    for i in range(620):
        append(db, sid, user(f"unrelated {i}"), created_at=1_000 + i)
    assert _snippets(db, people, "qq") == ["the old qq answer"]
    assert _snippets(db, people, "old qq") == ["the old qq answer"]


@pytest.mark.parametrize("every", [1, 3, 50])
def test_every_plan_finds_the_same_newest_hits(
    db: Database, people: People, monkeypatch: pytest.MonkeyPatch, every: int
) -> None:
    """Dense, mid and sparse matches: a scan, walks of the owner's newest rows (the
    second one sized by the density the first saw) and the trigram index give the
    same newest-first page; another owner's matches, denser still, never show."""
    mine = create_session(db, people.alice.id, title="mine")
    theirs = create_session(db, people.bob.id, title="theirs")
    for i in range(150):
        append(db, mine, user(f"needle {i}" if i % every == 0 else f"hay {i}"), created_at=10 + i)
        append(db, theirs, user(f"bob's needle {i}"), created_at=10 + i)
    expected = [f"needle {i}" for i in reversed(range(150)) if i % every == 0][:20]
    plans = {"scan": (1000, 16_000, 5000), "walks": (4, 10_000, 0), "index": (4, 0, 0)}
    for name, (probe, walk_limit, small) in plans.items():
        monkeypatch.setattr(search_module, "PROBE_WINDOW", probe)
        monkeypatch.setattr(search_module, "WALK_LIMIT", walk_limit)
        monkeypatch.setattr(search_module, "SMALL_SCOPE", small)
        assert _snippets(db, people, "needle", 20) == expected, name
