"""S3: one read-only snapshot; a concurrent writer never adds or removes hits mid-read."""

from __future__ import annotations

import threading

import pytest

from convodex.server import Database, append, create_session, remove, rewrite, search_messages
from server.server_helpers import tool_call, user
from server_fixtures import People

pytestmark = pytest.mark.usefixtures("tuning")


@pytest.mark.parametrize("query", ["zq", "zq answer"])
def test_a_concurrent_writer_never_changes_a_running_search(
    db: Database, people: People, query: str
) -> None:
    sid = create_session(db, people.alice.id, title="busy")
    append(db, sid, user("first zq answer"), created_at=1)
    append(db, sid, user("second zq answer"), created_at=2)
    for i in range(450):
        # Newer raw matches that show nothing (fewer than the 500 raw matches one
        # search accepts in all)...
        append(db, sid, tool_call(f"zq {i}"), created_at=10 + i)
    for i in range(300):
        # ... and newer shown rows that do not match: the raw reader needs two windows,
        # and the projected path probes these first.
        append(db, sid, user(f"filler {i}"), created_at=1_000 + i)
    expected = [h.snippet for h in search_messages(db, people.alice, query)]
    assert expected == ["second zq answer", "first zq answer"]

    writes_done: list[bool] = []

    def writer() -> None:
        rewrite(db, sid, 2, user("second answer, changed"))
        remove(db, sid, 1)
        append(db, sid, user("late zq answer arrival"), created_at=5)
        writes_done.append(True)

    def interleave() -> None:
        if not writes_done:
            # A separate thread and connection, committed before the next page is read.
            thread = threading.Thread(target=writer)
            thread.start()
            thread.join()

    seen = [h.snippet for h in search_messages(db, people.alice, query, on_page=interleave)]
    assert writes_done == [True]
    assert seen == expected
    assert [h.snippet for h in search_messages(db, people.alice, "zq")] == [
        "late zq answer arrival"
    ]


def test_searches_during_a_stream_of_appends_see_whole_transactions(
    db: Database, people: People
) -> None:
    sid = create_session(db, people.alice.id, title="stream")
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(60):
                seq = append(db, sid, user(f"streamword {i}"))
                rewrite(db, sid, seq, user(f"streamword {i} final"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while not stop.is_set():
            hits = search_messages(db, people.alice, "streamword", 500)
            seqs = [h.seq for h in hits]
            assert seqs == sorted(seqs, reverse=True)
            # Rewrites are atomic: never two rows for one entry, never a gap.
            assert seqs == list(range(len(seqs), 0, -1))
    finally:
        thread.join()
    assert errors == []
