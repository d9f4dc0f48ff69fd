"""Random mutation sequences keep the derived state exact: the active-branch flags
equal the chain from the head, and the search rows equal the projection of the
journal, on both backends."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
from convodex.text.shown import projected_text
from server.server_helpers import assistant, tool_result, user
from server_fixtures import People

pytestmark = pytest.mark.usefixtures("tuning")

_tokens = itertools.count()

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 30), st.booleans(), st.integers(0, 3)),
        st.tuples(st.just("branch"), st.integers(0, 30), st.booleans(), st.integers(0, 3)),
        st.tuples(st.just("rewrite"), st.integers(0, 30), st.booleans(), st.integers(0, 3)),
        st.tuples(st.just("discard"), st.integers(0, 30), st.booleans(), st.integers(0, 3)),
        st.tuples(st.just("restore"), st.integers(0, 30), st.booleans(), st.integers(0, 3)),
        st.tuples(st.just("remove"), st.integers(0, 30), st.booleans(), st.integers(0, 3)),
    ),
    max_size=14,
)


def _payload(token: str, n: int, shape: int) -> dict[str, object]:
    text = f"{token} says {n}"
    if shape == 0:
        return user(text)
    if shape == 1:
        return assistant(text)
    if shape == 2:
        return tool_result(text)
    return assistant(f"<think>{text}</think>")


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_derived_state_matches_the_journal(
    db: Database, people: People, ops: list[tuple[str, int, bool, int]]
) -> None:
    token = f"inv{next(_tokens)}x"
    sid = create_session(db, people.alice.id)
    seqs: list[int] = []
    for n, (op, pick, flag, shape) in enumerate(ops):
        target = seqs[pick % len(seqs)] if seqs else None
        if op == "append" or target is None:
            seqs.append(append(db, sid, _payload(token, n, shape), meta=flag and shape == 0))
        elif op == "branch":
            seqs.append(append(db, sid, _payload(token, n, shape), parent_seq=target))
        elif op == "rewrite":
            rewrite(db, sid, target, _payload(token, n, shape))
        elif op == "discard":
            discard(db, sid, target)
        elif op == "restore":
            restore(db, sid, target)
        else:
            remove(db, sid, target)
            seqs.remove(target)

    with db.snapshot() as tx:
        head_row = tx.one("SELECT head_seq FROM sessions WHERE id = ?", (sid,))
        entries = tx.all(
            "SELECT seq, parent_seq, on_branch, payload, meta, discarded FROM entries"
            " WHERE session_id = ?",
            (sid,),
        )
        rows: dict[int, str] = dict(
            tx.all("SELECT seq, text FROM search_rows WHERE session_id = ?", (sid,))
        )
        owners = tx.all("SELECT DISTINCT personal_owner FROM entries WHERE session_id = ?", (sid,))
    assert head_row is not None
    assert owners in ([], [(people.alice.id,)])
    assert sorted(int(e[0]) for e in entries) == sorted(seqs)
    parent = {int(e[0]): e[1] for e in entries}
    chain: set[int] = set()
    current = head_row[0]
    while current is not None:
        assert current not in chain
        chain.add(int(current))
        current = parent[int(current)]
    assert {int(e[0]) for e in entries if e[2]} == chain
    expected_rows = {}
    for seq, _, _, payload, meta, discarded in entries:
        text = None if meta or discarded else projected_text(json.loads(payload))
        if text is not None:
            expected_rows[int(seq)] = text
    assert {int(k): v for k, v in rows.items()} == expected_rows
    found = {h.seq for h in search_messages(db, people.alice, token, 500)}
    assert found == set(expected_rows) & chain
    everywhere = search_messages(db, people.admin, token, 500, "instance")
    assert {h.seq for h in everywhere if h.session_id == sid} == found
