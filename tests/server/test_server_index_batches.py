"""The trigram index takes new rows in batches on SQLite (migration 0002): whatever
is indexed and whatever is still pending, every mutation shows in the next search."""

from __future__ import annotations

import pytest

from convodex.server import (
    Database,
    append,
    create_session,
    discard,
    remove,
    restore,
    rewrite,
    search_messages,
)
from server.server_helpers import tool_result, user
from server_fixtures import People

pytestmark = pytest.mark.usefixtures("tuning")

ENTRIES = 700  # several index batches of 256 row ids, and a pending tail


def _seqs(db: Database, people: People, query: str) -> list[int]:
    return sorted(h.seq for h in search_messages(db, people.alice, query, 500))


def test_indexed_and_pending_rows_follow_every_mutation(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id, title="batches")
    for i in range(1, ENTRIES + 1):
        append(db, sid, user(f"batchword item{i:04d}x"))
    if db.dialect.name == "sqlite":
        with db.snapshot() as tx:
            indexed = tx.one("SELECT indexed_through FROM search_fts_state")
        assert indexed is not None and 0 < indexed[0] < ENTRIES  # some indexed, some not
    assert len(_seqs(db, people, "batchword")) == 500  # the limit
    early, late = 10, ENTRIES - 3  # one surely indexed, one surely pending
    for seq in (early, late):
        assert _seqs(db, people, f"item{seq:04d}x") == [seq]
        rewrite(db, sid, seq, user(f"rewritten{seq:04d} words"))
        assert _seqs(db, people, f"item{seq:04d}x") == []
        assert _seqs(db, people, f"rewritten{seq:04d}") == [seq]
        discard(db, sid, seq)
        assert _seqs(db, people, f"rewritten{seq:04d}") == []
        restore(db, sid, seq)
        assert _seqs(db, people, f"rewritten{seq:04d}") == [seq]
        rewrite(db, sid, seq, tool_result(f"rewritten{seq:04d} words"))
        assert _seqs(db, people, f"rewritten{seq:04d}") == []
    remove(db, sid, early + 1)
    remove(db, sid, late + 1)
    for seq in (early + 1, late + 1):
        assert _seqs(db, people, f"item{seq:04d}x") == []
    for seq in (early + 2, late - 1, 300, 600):
        assert _seqs(db, people, f"item{seq:04d}x") == [seq]
    if db.dialect.name == "sqlite":
        # Index the pending tail as a catch-up would; then the index must agree with
        # the entries exactly (FTS5 compares them and raises on any difference).
        with db.write() as tx:
            tx.run(
                "INSERT INTO search_fts (rowid, text) SELECT row_id, text FROM entries"
                " WHERE row_id > (SELECT indexed_through FROM search_fts_state)"
                " AND text IS NOT NULL"
            )
            tx.run(
                "UPDATE search_fts_state SET indexed_through = (SELECT MAX(row_id) FROM entries)"
            )
            tx.run("INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 1)")
