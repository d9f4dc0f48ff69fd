"""S3 scope: who sees what, with zero leaks; empty shells and historical channels."""

from __future__ import annotations

import itertools

import pytest

from convodex.errors import AccessDenied, QueryError
from convodex.server import Caller, Database, append, create_session, search_messages
from server.server_helpers import tool_result, user
from server_fixtures import People

pytestmark = pytest.mark.usefixtures("tuning")

KINDS = ("personal", "channel")


def _world(db: Database, people: People) -> dict[str, tuple[str, str]]:
    """One session per (owner, kind), each saying 'matrixword'; returns id → (owner, kind)."""
    world: dict[str, tuple[str, str]] = {}
    for name, kind in itertools.product(("alice", "bob", "admin"), KINDS):
        owner: Caller = getattr(people, name)
        sid = create_session(db, owner.id, title=f"{name}-{kind}", kind=kind)
        append(db, sid, user(f"matrixword from {name} in {kind}"))
        world[sid] = (name, kind)
    return world


@pytest.mark.parametrize("query", ["matrixword", "ma"])
def test_access_matrix_has_no_leaks(db: Database, people: People, query: str) -> None:
    world = _world(db, people)
    for name in ("alice", "bob", "admin"):
        caller: Caller = getattr(people, name)
        own = {sid for sid, (owner, kind) in world.items() if owner == name and kind == "personal"}
        found = {h.session_id for h in search_messages(db, caller, query, 50, "account")}
        assert found == own, name
        if caller.is_admin:
            found = {h.session_id for h in search_messages(db, caller, query, 50, "instance")}
            assert found == set(world)
        else:
            with pytest.raises(AccessDenied):
                search_messages(db, caller, query, 50, "instance")
    with pytest.raises(QueryError):
        search_messages(db, people.admin, query, 50, "everything")


def test_empty_shells_are_never_returned(db: Database, people: People) -> None:
    for kind in KINDS:
        sid = create_session(db, people.alice.id, title="shell", kind=kind)
        append(db, sid, user("shellword pinned"), meta=True)
        append(db, sid, tool_result("shellword output"))
    create_session(db, people.alice.id, title="shellword title only")
    for scope, caller in (("account", people.alice), ("instance", people.admin)):
        for query in ("shellword", "sh"):
            assert search_messages(db, caller, query, 50, scope) == []


def _historical(db: Database, session_id: str, seq: int, payload: str) -> None:
    """An entry written before the projection existed (no row, never projected)."""
    with db.write() as tx:
        tx.run(
            "INSERT INTO entries (session_id, seq, created_at, parent_seq, role, payload,"
            " payload_hash, on_branch) VALUES (?, ?, ?, ?, ?, ?, 'h', TRUE)",
            (session_id, seq, tx.ts(seq), seq - 1 or None, "user", payload),
        )
        tx.run("UPDATE sessions SET head_seq = ? WHERE id = ?", (seq, session_id))


def test_instance_scope_matches_unprojected_channel_entries_on_raw_json(
    db: Database, people: People
) -> None:
    channel = create_session(db, people.alice.id, title="old channel", kind="channel")
    _historical(db, channel, 1, '{"role":"user","content":"legacyword from the channel"}')
    _historical(db, channel, 2, '{"role":"user","content":"<think>legacyword</think>hidden"}')
    personal = create_session(db, people.alice.id, title="old personal")
    _historical(db, personal, 1, '{"role":"user","content":"legacyword from a person"}')
    hits = search_messages(db, people.admin, "legacyword", 50, "instance")
    assert [(h.session_id, h.seq, h.snippet) for h in hits] == [
        (channel, 1, "legacyword from the channel")
    ]
    assert search_messages(db, people.alice, "legacyword") == []
    # Short queries read raw JSON for every journal in scope.
    assert {h.session_id for h in search_messages(db, people.admin, "yw", 50, "instance")} == {
        channel,
        personal,
    }
