"""The authoritative journal (SPEC S1). Every mutation refreshes the search
projection in the same transaction, so a failure rolls both back.

Each function takes a :class:`~convodex.server.db.Database` and runs one
transaction (a fork runs several: its copy stays invisible to search until
``fork_state`` is ``complete``). Pass ``caller`` to enforce ownership: callers may
touch only sessions they own, administrators any.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from convodex.errors import AccessDenied, Conflict, NotFound, QueryError
from convodex.server.accounts import Caller
from convodex.server.db import Database, Tx, now_micros
from convodex.server.inputs import check_id, check_int64, check_seq, storable_text
from convodex.server.projection import (
    NewEntry,
    new_entry,
    parse_payload,
    payload_hash,
    refresh_entry,
)
from convodex.server.teams import member_team

KINDS = ("personal", "channel")
FORK_BATCH = 500

Payload = str | Mapping[str, Any]


@dataclass(frozen=True)
class Session:
    """A session row as the journal API returns it."""

    id: str
    owner_id: str
    kind: str
    title: str
    created_at: int
    forked_from: str | None
    fork_state: str
    cleared_at: int | None
    head_seq: int | None
    #: the team the session is shared with, or ``None``
    team_id: str | None = None


@dataclass(frozen=True)
class Entry:
    """An entry row as the journal API returns it."""

    session_id: str
    seq: int
    row_id: int
    created_at: int
    parent_seq: int | None
    role: str
    payload: str
    payload_hash: str
    meta: bool
    discarded: bool


_SESSION_COLUMNS = (
    "id, owner_id, kind, title, created_at, forked_from, fork_state, cleared_at, head_seq, team_id"
)


def _session(tx: Tx, row: tuple[Any, ...]) -> Session:
    return Session(
        id=str(row[0]),
        owner_id=str(row[1]),
        kind=str(row[2]),
        title=str(row[3]),
        created_at=tx.dialect.ts_value(row[4]),
        forked_from=None if row[5] is None else str(row[5]),
        fork_state=str(row[6]),
        cleared_at=None if row[7] is None else tx.dialect.ts_value(row[7]),
        head_seq=None if row[8] is None else int(row[8]),
        team_id=None if row[9] is None else str(row[9]),
    )


def _personal_owner(owner_id: str, kind: str) -> str | None:
    """What ``entries.personal_owner`` holds for a session's entries."""
    return owner_id if kind == "personal" else None


def _check_owner(caller: Caller | None, owner_id: str) -> None:
    if caller is not None and not caller.is_admin and caller.id != owner_id:
        raise AccessDenied("this session belongs to another account")


def _locked(
    tx: Tx, session_id: str, caller: Caller | None, *, allow_copying: bool = False
) -> Session:
    """The session row, locked for this transaction, after the ownership check."""
    return _locked_with_top(tx, session_id, caller, allow_copying=allow_copying)[0]


def _locked_with_top(
    tx: Tx, session_id: str, caller: Caller | None, *, allow_copying: bool = False
) -> tuple[Session, int]:
    """:func:`_locked` and the session's highest ``seq`` (0 when empty).

    The highest ``seq`` is read by a second statement, after the lock is held. Read in
    the statement that waits for the lock, PostgreSQL answers it from that statement's
    snapshot, taken before the other writer committed: two appends then chose the same
    ``seq`` and one failed on the unique key (issue 29). Under READ COMMITTED each
    statement sees every commit before it started, so the second one is exact.
    """
    check_id(session_id, "session id")
    row = tx.one(
        f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?" + tx.dialect.for_update,
        (session_id,),
    )
    if row is None:
        raise NotFound("session not found")
    session = _session(tx, row)
    _check_owner(caller, session.owner_id)
    if session.fork_state != "complete" and not allow_copying:
        raise Conflict("the session is still being copied by a fork")
    top = tx.one("SELECT MAX(seq) FROM entries WHERE session_id = ?", (session_id,))
    return session, int(top[0] or 0) if top is not None else 0


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise QueryError("kind must be personal or channel")


def _require_account(tx: Tx, account_id: str) -> None:
    check_id(account_id, "account id")
    if tx.one("SELECT 1 FROM accounts WHERE id = ?", (account_id,)) is None:
        raise NotFound("account not found")


def _parent_of(tx: Tx, session_id: str, seq: int, field: str = "seq") -> int | None:
    """The ``parent_seq`` of an entry that must exist (:class:`NotFound` otherwise)."""
    check_seq(seq, field)
    row = tx.one(
        "SELECT parent_seq FROM entries WHERE session_id = ? AND seq = ?", (session_id, seq)
    )
    if row is None:
        raise NotFound("entry not found")
    return None if row[0] is None else int(row[0])


def recompute_branch(tx: Tx, session_id: str, head_seq: int | None) -> None:
    """Mark exactly the chain from ``head_seq`` to the root as the active branch."""
    rows = tx.all(
        "SELECT seq, parent_seq, on_branch FROM entries WHERE session_id = ?", (session_id,)
    )
    parent = {int(seq): (None if p is None else int(p)) for seq, p, _ in rows}
    chain: set[int] = set()
    current = head_seq
    while current is not None and current in parent and current not in chain:
        chain.add(current)
        current = parent[current]
    for seq, _, flag in rows:
        wanted = int(seq) in chain
        if bool(flag) != wanted:
            tx.run(
                "UPDATE entries SET on_branch = ? WHERE session_id = ? AND seq = ?",
                (wanted, session_id, seq),
            )


def create_session(
    db: Database,
    owner_id: str,
    *,
    title: str = "",
    kind: str = "personal",
    session_id: str | None = None,
    created_at: int | None = None,
    team: str | None = None,
    caller: Caller | None = None,
) -> str:
    """Create an empty session and return its id; ``team`` shares it with a team the
    owner belongs to."""
    _check_kind(kind)
    _check_owner(caller, owner_id)
    new_id = check_id(session_id, "session id") if session_id is not None else uuid.uuid4().hex
    storable_text(title, "title")
    stamp = check_int64(created_at, "created_at") if created_at is not None else now_micros()
    with db.write() as tx:
        _require_account(tx, owner_id)
        if tx.one("SELECT 1 FROM sessions WHERE id = ?", (new_id,)) is not None:
            raise Conflict("a session with this id already exists")
        tid = None if team is None else member_team(tx, owner_id, team)
        tx.run(
            "INSERT INTO sessions (id, owner_id, kind, title, created_at, fork_state, team_id)"
            " VALUES (?, ?, ?, ?, ?, 'complete', ?)",
            (new_id, owner_id, kind, title, tx.ts(stamp), tid),
        )
    return new_id


def share(db: Database, session_id: str, team: str | None, *, caller: Caller | None = None) -> None:
    """Share a session with a team its owner belongs to (``None``: stop sharing); its
    entries follow in the same transaction, so no search sees half of the change."""
    with db.write() as tx:
        session = _locked(tx, session_id, caller)
        tid = None if team is None else member_team(tx, session.owner_id, team)
        tx.run("UPDATE sessions SET team_id = ? WHERE id = ?", (tid, session_id))
        tx.run("UPDATE entries SET team_id = ? WHERE session_id = ?", (tid, session_id))


def get_session(db: Database, session_id: str, *, caller: Caller | None = None) -> Session:
    check_id(session_id, "session id")
    with db.snapshot() as tx:
        row = tx.one(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
        if row is None:
            raise NotFound("session not found")
        session = _session(tx, row)
    _check_owner(caller, session.owner_id)
    return session


def list_entries(db: Database, session_id: str, *, caller: Caller | None = None) -> list[Entry]:
    """Every entry of a session in ``seq`` order (all branches, discarded included)."""
    get_session(db, session_id, caller=caller)
    with db.snapshot() as tx:
        rows = tx.all(
            "SELECT session_id, seq, row_id, created_at, parent_seq, role, payload,"
            " payload_hash, meta, discarded FROM entries WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        return [
            Entry(
                session_id=str(r[0]),
                seq=int(r[1]),
                row_id=int(r[2]),
                created_at=tx.dialect.ts_value(r[3]),
                parent_seq=None if r[4] is None else int(r[4]),
                role=str(r[5]),
                payload=str(r[6]),
                payload_hash=str(r[7]),
                meta=bool(r[8]),
                discarded=bool(r[9]),
            )
            for r in rows
        ]


def append(
    db: Database,
    session_id: str,
    payload: Payload,
    *,
    parent_seq: int | None = None,
    meta: bool = False,
    created_at: int | None = None,
    caller: Caller | None = None,
) -> int:
    """Append an entry and move the head to it; return its ``seq``.

    Without ``parent_seq`` the entry continues the active branch. An earlier
    ``parent_seq`` starts a new branch there: the entries after it on the old branch
    stay in the journal but leave the active branch (and search).
    """
    entry = new_entry(payload, meta=meta)
    stamp = check_int64(created_at, "created_at") if created_at is not None else now_micros()
    if parent_seq is not None:
        check_seq(parent_seq, "parentSeq")
    with db.write() as tx:
        return append_entry(tx, session_id, entry, stamp, parent_seq=parent_seq, caller=caller)


def append_entry(
    tx: Tx,
    session_id: str,
    entry: NewEntry,
    created_at: int,
    *,
    parent_seq: int | None = None,
    caller: Caller | None = None,
) -> int:
    """The body of :func:`append` inside an open write transaction (the projected text
    is a column of the entry, so both are one write)."""
    session, top = _locked_with_top(tx, session_id, caller)
    head = session.head_seq
    parent = head if parent_seq is None else parent_seq
    if parent_seq is not None:
        _parent_of(tx, session_id, parent_seq, "parentSeq")
    seq = top + 1
    extends_head = parent == head
    stamp = tx.ts(created_at)
    tx.run(
        "INSERT INTO entries (session_id, seq, created_at, parent_seq, role, payload,"
        " payload_hash, meta, discarded, on_branch, projected, text, personal_owner, team_id,"
        f" tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, FALSE, ?, TRUE, ?, ?, ?,"
        f" {tx.dialect.tokens_sql})",
        (
            session_id,
            seq,
            stamp,
            parent,
            entry.role,
            entry.payload,
            entry.payload_hash,
            entry.meta,
            extends_head,
            entry.text,
            _personal_owner(session.owner_id, session.kind),
            session.team_id,
            tx.dialect.tokens_param(entry.tokens),
        ),
    )
    tx.run(
        "UPDATE sessions SET head_seq = ?, updated_at = CASE WHEN updated_at IS NULL"
        " OR updated_at < ? THEN ? ELSE updated_at END WHERE id = ?",
        (seq, stamp, stamp, session_id),
    )
    if not extends_head:
        recompute_branch(tx, session_id, seq)
    return seq


def rewrite(
    db: Database, session_id: str, seq: int, payload: Payload, *, caller: Caller | None = None
) -> None:
    """Replace an entry's payload (and role); its search row follows."""
    text, message = parse_payload(payload)
    with db.write() as tx:
        _locked(tx, session_id, caller)
        _parent_of(tx, session_id, seq)
        tx.run(
            "UPDATE entries SET payload = ?, payload_hash = ?, role = ?"
            " WHERE session_id = ? AND seq = ?",
            (text, payload_hash(text), str(message["role"]), session_id, seq),
        )
        refresh_entry(tx, session_id, seq)


def _set_discarded(
    db: Database, session_id: str, seq: int, discarded: bool, caller: Caller | None
) -> None:
    with db.write() as tx:
        _locked(tx, session_id, caller)
        _parent_of(tx, session_id, seq)
        tx.run(
            "UPDATE entries SET discarded = ? WHERE session_id = ? AND seq = ?",
            (discarded, session_id, seq),
        )
        refresh_entry(tx, session_id, seq)


def discard(db: Database, session_id: str, seq: int, *, caller: Caller | None = None) -> None:
    """Hide an entry without deleting it; :func:`restore` brings it back."""
    _set_discarded(db, session_id, seq, True, caller)


def restore(db: Database, session_id: str, seq: int, *, caller: Caller | None = None) -> None:
    """Bring a discarded entry back (and back into search)."""
    _set_discarded(db, session_id, seq, False, caller)


def remove(db: Database, session_id: str, seq: int, *, caller: Caller | None = None) -> None:
    """Physically delete an entry. Its children are re-attached to its parent and a
    head pointing at it moves to its parent, so the branch stays connected."""
    with db.write() as tx:
        session = _locked(tx, session_id, caller)
        parent = _parent_of(tx, session_id, seq)
        tx.run("DELETE FROM entries WHERE session_id = ? AND seq = ?", (session_id, seq))
        tx.run(
            "UPDATE entries SET parent_seq = ? WHERE session_id = ? AND parent_seq = ?",
            (parent, session_id, seq),
        )
        if session.head_seq == seq:
            tx.run("UPDATE sessions SET head_seq = ? WHERE id = ?", (parent, session_id))


def clear(db: Database, session_id: str, *, caller: Caller | None = None) -> None:
    """Delete every entry of a session; the session itself stays, empty."""
    with db.write() as tx:
        _locked(tx, session_id, caller)
        tx.run("DELETE FROM entries WHERE session_id = ?", (session_id,))
        tx.run(
            "UPDATE sessions SET head_seq = NULL, cleared_at = ? WHERE id = ?",
            (tx.ts(now_micros()), session_id),
        )


def rekey(
    db: Database,
    session_id: str,
    *,
    new_id: str | None = None,
    owner_id: str | None = None,
    kind: str | None = None,
    caller: Caller | None = None,
) -> Session:
    """Move a session to a new id, owner and/or kind; its entries and rows follow."""
    if kind is not None:
        _check_kind(kind)
    if new_id is not None:
        check_id(new_id, "new session id")
    if owner_id is not None:
        _check_owner(caller, owner_id)
    with db.write() as tx:
        session = _locked(tx, session_id, caller)
        target = new_id or session_id
        if target != session_id:
            if tx.one("SELECT 1 FROM sessions WHERE id = ?", (target,)) is not None:
                raise Conflict("a session with this id already exists")
        if owner_id is not None:
            _require_account(tx, owner_id)
        # Entries (and so their search rows) follow the id through ON UPDATE CASCADE.
        new_owner, new_kind = owner_id or session.owner_id, kind or session.kind
        tx.run(
            "UPDATE sessions SET id = ?, owner_id = ?, kind = ? WHERE id = ?",
            (target, new_owner, new_kind, session_id),
        )
        if (new_owner, new_kind) != (session.owner_id, session.kind):
            tx.run(
                "UPDATE entries SET personal_owner = ? WHERE session_id = ?",
                (_personal_owner(new_owner, new_kind), target),
            )
        if target != session_id:
            tx.run(
                "UPDATE sessions SET forked_from = ? WHERE forked_from = ?", (target, session_id)
            )
        row = tx.one(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (target,))
        assert row is not None
        return _session(tx, row)


def begin_fork(
    db: Database,
    session_id: str,
    *,
    new_id: str | None = None,
    owner_id: str | None = None,
    caller: Caller | None = None,
) -> str:
    """Create the fork's session in ``fork_state='copying'``; search ignores it until
    :func:`complete_fork`. The fork belongs to ``owner_id``, else the caller, else the
    source's owner."""
    fork_id = check_id(new_id, "new session id") if new_id is not None else uuid.uuid4().hex
    with db.write() as tx:
        source = _locked(tx, session_id, caller)
        owner = owner_id or (caller.id if caller is not None else source.owner_id)
        _check_owner(caller, owner)
        _require_account(tx, owner)
        if tx.one("SELECT 1 FROM sessions WHERE id = ?", (fork_id,)) is not None:
            raise Conflict("a session with this id already exists")
        tx.run(
            "INSERT INTO sessions (id, owner_id, kind, title, created_at, forked_from,"
            " fork_state, head_seq, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'copying', ?,"
            " (SELECT updated_at FROM sessions WHERE id = ?))",
            (
                fork_id,
                owner,
                source.kind,
                source.title,
                tx.ts(now_micros()),
                source.id,
                source.head_seq,
                source.id,
            ),
        )
    return fork_id


def copy_fork_batch(db: Database, fork_id: str, *, batch_size: int = FORK_BATCH) -> int:
    """Copy the next ``batch_size`` entries (and their rows) into a copying fork, in
    one transaction; return how many were copied (0 when the copy is done)."""
    with db.write() as tx:
        fork, after = _locked_with_top(tx, fork_id, None, allow_copying=True)
        if fork.fork_state != "copying" or fork.forked_from is None:
            return 0
        copied = tx.run(
            "INSERT INTO entries (session_id, seq, created_at, parent_seq, role, payload,"
            " payload_hash, meta, discarded, on_branch, projected, text, personal_owner,"
            " team_id, tokens) SELECT ?, seq, created_at, parent_seq, role, payload,"
            " payload_hash, meta, discarded, on_branch, projected, text, ?, ?, tokens"
            " FROM entries"
            " WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (
                fork_id,
                _personal_owner(fork.owner_id, fork.kind),
                fork.team_id,
                fork.forked_from,
                after,
                batch_size,
            ),
        )
        return max(copied, 0)


def complete_fork(db: Database, fork_id: str) -> None:
    """Mark a fork complete: from this commit on, search may return its entries."""
    with db.write() as tx:
        fork = _locked(tx, fork_id, None, allow_copying=True)
        recompute_branch(tx, fork_id, fork.head_seq)
        tx.run("UPDATE sessions SET fork_state = 'complete' WHERE id = ?", (fork_id,))


def fork(
    db: Database,
    session_id: str,
    *,
    new_id: str | None = None,
    owner_id: str | None = None,
    caller: Caller | None = None,
    batch_size: int = FORK_BATCH,
) -> str:
    """Copy a session into a new one (batches, then ``complete``); return the new id."""
    fork_id = begin_fork(db, session_id, new_id=new_id, owner_id=owner_id, caller=caller)
    while copy_fork_batch(db, fork_id, batch_size=batch_size):
        pass
    complete_fork(db, fork_id)
    return fork_id
