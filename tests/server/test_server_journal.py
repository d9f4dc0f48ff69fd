"""S1/S2: every journal mutation is reflected in the very next search."""

from __future__ import annotations

import hashlib

import pytest

from convodex.errors import AccessDenied, Conflict, NotFound, QueryError
from convodex.server import (
    Caller,
    Database,
    append,
    begin_fork,
    clear,
    complete_fork,
    copy_fork_batch,
    create_session,
    discard,
    fork,
    get_session,
    list_entries,
    rekey,
    remove,
    restore,
    rewrite,
    search_messages,
)
from convodex.server.journal import append_entry
from convodex.server.projection import new_entry
from server.server_helpers import assistant, tool_result, user
from server_fixtures import People

pytestmark = pytest.mark.usefixtures("tuning")


def _found(db: Database, people: People, query: str, scope: str = "account") -> list[str]:
    caller = people.admin if scope == "instance" else people.alice
    return [f"{h.session_id}:{h.seq}" for h in search_messages(db, caller, query, 50, scope)]


def _rows(db: Database) -> int:
    with db.snapshot() as tx:
        row = tx.one("SELECT COUNT(*) FROM search_rows")
    assert row is not None
    return int(row[0])


def test_append_is_found_at_once(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id, title="t")
    assert _found(db, people, "kumquat") == []
    seq = append(db, sid, user("a kumquat please"))
    assert _found(db, people, "kumquat") == [f"{sid}:{seq}"]


def test_branch_append_moves_the_head_and_hides_the_old_branch(
    db: Database, people: People
) -> None:
    sid = create_session(db, people.alice.id)
    one = append(db, sid, user("alpha one"))
    append(db, sid, assistant("alpha two"))
    append(db, sid, user("alpha three"))
    branch = append(db, sid, user("alpha branch"), parent_seq=one)
    assert get_session(db, sid).head_seq == branch
    assert _found(db, people, "alpha") == [f"{sid}:{branch}", f"{sid}:{one}"]
    # Continuing without a parent extends the new branch.
    more = append(db, sid, assistant("alpha more"))
    assert _found(db, people, "alpha")[0] == f"{sid}:{more}"
    # Branching back to the old tip's parent revives that path up to it.
    tip = append(db, sid, user("alpha revived"), parent_seq=2)
    assert _found(db, people, "alpha") == [f"{sid}:{tip}", f"{sid}:2", f"{sid}:{one}"]
    with pytest.raises(NotFound):
        append(db, sid, user("x"), parent_seq=99)


def test_rewrite_replaces_text_and_keeps_identity(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id)
    seq = append(db, sid, user("original wording"))
    before = list_entries(db, sid)[0]
    new_payload = '{"role": "user", "content": "revised wording"}'
    rewrite(db, sid, seq, new_payload)
    after = list_entries(db, sid)[0]
    assert _found(db, people, "original") == []
    assert _found(db, people, "revised") == [f"{sid}:{seq}"]
    assert (after.row_id, after.created_at) == (before.row_id, before.created_at)
    assert after.payload == new_payload
    assert after.payload_hash == hashlib.sha256(new_payload.encode()).hexdigest()
    # Rewriting into a tool result drops the row.
    rewrite(db, sid, seq, tool_result("revised wording"))
    assert _found(db, people, "revised") == []


def test_payloads_and_hashes_are_kept_byte_for_byte(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id)
    raw = '{ "role":"user",  "content":"nul\\u0000here \\u010das" }'
    append(db, sid, raw)
    entry = list_entries(db, sid)[0]
    assert entry.payload == raw
    assert entry.payload_hash == hashlib.sha256(raw.encode()).hexdigest()
    hits = search_messages(db, people.alice, "here čas")
    assert [h.snippet for h in hits] == ["nul\ufffdhere čas"]


def test_rekey_to_channel_owner_and_id(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id, title="moving")
    append(db, sid, user("rekeyword text"))
    rekey(db, sid, kind="channel")
    assert _found(db, people, "rekeyword") == []
    assert _found(db, people, "rekeyword", "instance") == [f"{sid}:1"]
    rekey(db, sid, kind="personal", owner_id=people.bob.id)
    assert _found(db, people, "rekeyword") == []
    assert [h.owner_id for h in search_messages(db, people.bob, "rekeyword")] == [people.bob.id]
    moved = rekey(db, sid, new_id="renamed")
    assert moved.id == "renamed"
    assert [h.session_id for h in search_messages(db, people.bob, "rekeyword")] == ["renamed"]
    assert [h.session_id for h in search_messages(db, people.bob, "re", 5)] == ["renamed"]
    with pytest.raises(NotFound):
        get_session(db, sid)
    other = create_session(db, people.bob.id)
    with pytest.raises(Conflict):
        rekey(db, other, new_id="renamed")
    with pytest.raises(NotFound):
        rekey(db, other, owner_id="nobody")
    with pytest.raises(QueryError):
        rekey(db, other, kind="group")


def test_discard_and_restore(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id)
    seq = append(db, sid, user("discardable words"))
    discard(db, sid, seq)
    assert _found(db, people, "discardable") == []
    assert _found(db, people, "di") == []
    restore(db, sid, seq)
    assert _found(db, people, "discardable") == [f"{sid}:{seq}"]


def test_remove_deletes_physically_and_keeps_the_branch(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id)
    append(db, sid, user("removal first"))
    append(db, sid, assistant("removal second"))
    append(db, sid, user("removal third"))
    remove(db, sid, 2)
    assert [e.seq for e in list_entries(db, sid)] == [1, 3]
    assert _found(db, people, "removal") == [f"{sid}:3", f"{sid}:1"]
    remove(db, sid, 3)
    assert get_session(db, sid).head_seq == 1
    assert _found(db, people, "removal") == [f"{sid}:1"]
    assert _rows(db) == 1
    with pytest.raises(NotFound):
        remove(db, sid, 3)


def test_clear_leaves_an_empty_shell(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id)
    append(db, sid, user("clearable words"))
    clear(db, sid)
    assert _found(db, people, "clearable") == []
    assert _found(db, people, "cl") == []
    assert list_entries(db, sid) == []
    session = get_session(db, sid)
    assert session.cleared_at is not None and session.head_seq is None
    assert append(db, sid, user("after clear")) == 1


def test_fork_is_invisible_while_copying(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id, title="source")
    for i in range(5):
        append(db, sid, user(f"forkword {i}"))
    fork_id = begin_fork(db, sid)
    assert copy_fork_batch(db, fork_id, batch_size=2) == 2
    assert get_session(db, fork_id).fork_state == "copying"
    assert {h.session_id for h in search_messages(db, people.alice, "forkword")} == {sid}
    assert {h.session_id for h in search_messages(db, people.alice, "fo")} == {sid}
    everywhere = search_messages(db, people.admin, "forkword", 50, "instance")
    assert {h.session_id for h in everywhere} == {sid}
    with pytest.raises(Conflict):
        append(db, fork_id, user("too early"))
    while copy_fork_batch(db, fork_id, batch_size=2):
        pass
    complete_fork(db, fork_id)
    hits = search_messages(db, people.alice, "forkword")
    assert [h.session_id for h in hits].count(fork_id) == 5
    assert get_session(db, fork_id).forked_from == sid
    whole = fork(db, sid)
    assert [e.payload for e in list_entries(db, whole)] == [
        e.payload for e in list_entries(db, sid)
    ]


def test_fork_keeps_the_active_branch(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id)
    append(db, sid, user("branchy root"))
    append(db, sid, user("branchy old"))
    append(db, sid, user("branchy new"), parent_seq=1)
    fork_id = fork(db, sid, batch_size=1)
    found = {h.seq for h in search_messages(db, people.alice, "branchy") if h.session_id == fork_id}
    assert found == {1, 3}


def test_a_fork_or_rekey_to_another_owner_moves_what_each_account_finds(
    db: Database, people: People
) -> None:
    sid = create_session(db, people.alice.id)
    append(db, sid, user("ownerword note"))

    def found(caller: Caller) -> dict[str, set[str]]:
        # A projected query and a raw-JSON one (the latter reads the owner's index).
        return {
            q: {h.session_id for h in search_messages(db, caller, q)} for q in ("ownerword", "rw")
        }

    fork_id = fork(db, sid, owner_id=people.bob.id)
    assert found(people.alice) == {"ownerword": {sid}, "rw": {sid}}
    assert found(people.bob) == {"ownerword": {fork_id}, "rw": {fork_id}}
    rekey(db, fork_id, owner_id=people.alice.id)
    assert found(people.bob) == {"ownerword": set(), "rw": set()}
    assert found(people.alice) == {"ownerword": {sid, fork_id}, "rw": {sid, fork_id}}
    rekey(db, sid, kind="channel")
    assert found(people.alice) == {"ownerword": {fork_id}, "rw": {fork_id}}
    rekey(db, sid, kind="personal")
    assert found(people.alice) == {"ownerword": {sid, fork_id}, "rw": {sid, fork_id}}


def test_meta_tool_results_and_blank_text_get_no_rows(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id)
    append(db, sid, user("meta pinned context"), meta=True)
    append(db, sid, tool_result("tool output words"))
    append(db, sid, assistant("<think>only thinking</think>"))
    assert _rows(db) == 0
    assert _found(db, people, "pinned") == []
    assert _found(db, people, "output") == []
    assert _found(db, people, "ol") == []


def test_a_failed_transaction_rolls_back_journal_and_projection(
    db: Database, people: People
) -> None:
    sid = create_session(db, people.alice.id)
    with pytest.raises(RuntimeError), db.write() as tx:
        append_entry(tx, sid, new_entry(user("rolled back words"), meta=False), 1)
        assert tx.one("SELECT COUNT(*) FROM search_rows") == (1,)
        raise RuntimeError("boom")
    assert list_entries(db, sid) == [] and _rows(db) == 0
    assert _found(db, people, "rolled back") == []


def test_ownership_is_enforced_when_a_caller_is_given(db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id, caller=people.alice)
    with pytest.raises(AccessDenied):
        append(db, sid, user("intrusion"), caller=people.bob)
    with pytest.raises(AccessDenied):
        create_session(db, people.alice.id, caller=people.bob)
    with pytest.raises(AccessDenied):
        rekey(db, sid, owner_id=people.bob.id, caller=people.alice)
    with pytest.raises(AccessDenied):
        fork(db, sid, caller=people.bob)
    append(db, sid, user("admin may write"), caller=people.admin)
    with pytest.raises(Conflict):
        create_session(db, people.alice.id, session_id=sid)
    with pytest.raises(QueryError):
        append(db, sid, "not json")
    with pytest.raises(QueryError):
        append(db, sid, '["no role"]')
