"""What ``convodex sync`` stores (SPEC S6): one hub session per (owner, machine, agent,
local session id), replaced whole when the local session changes, deleted for good
when the local one is; a fork or sub-agent session points at the hub copy of the one it
came from (``forked_from``).

A session's upload comes in parts (a request body is at most 16 MiB): part 0 resets
the hub copy, every part appends, the final one marks it complete with the digest
of what was sent. Until then the session is ``copying`` (the fork rule: search and
the sessions list ignore it), so a killed sync leaves nothing half-visible and the
next run starts the session again at part 0, never duplicating an entry. A deleted
key keeps a tombstone: a stale copy pushed later (an old clone of the machine, a
restored backup) is answered ``deleted`` and stored nowhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from convodex.errors import AccessDenied, Conflict, InvalidInput, QueryError
from convodex.server.accounts import Caller
from convodex.server.db import Database, Tx, now_micros
from convodex.server.inputs import check_id, check_int64, deeper_than, storable_text
from convodex.server.journal import recompute_branch
from convodex.server.projection import NewEntry, new_entry, row_text
from convodex.server.teams import member_team
from convodex.text.tokens import indexed_tokens

#: the hub's answers to one part: stored, already there, or refused for good
STORED, UNCHANGED, DELETED = "stored", "unchanged", "deleted"
MAX_DIGEST = 128
#: how deep a synced payload may nest: a request body's limit (64) less the levels
#: around a payload (the body, its entries list, the entry)
PAYLOAD_DEPTH = 61
#: the columns of a synced entry, in the order ``_append`` gives their values
ENTRY_COLUMNS = (
    "session_id", "seq", "created_at", "parent_seq", "role", "payload", "payload_hash",
    "meta", "discarded", "on_branch", "projected", "text", "personal_owner", "team_id",
    "tokens",
)  # fmt: skip


class SyncEntry(msgspec.Struct, rename="camel"):
    """One entry of an upload as it comes over HTTP: its payload kept as the JSON text
    it was sent as (stored as it is: no second serialization on the hub)."""

    payload: msgspec.Raw
    created_at: int
    #: the entry it continues (its place in the whole upload, from 1; 0: none, a
    #: root); default: the entry before it. Only an abandoned branch's first entry
    #: names one.
    parent: int | None = None


class SyncPart(msgspec.Struct, rename="camel"):
    """One request of ``convodex sync``: a session's facts and a run of its entries."""

    machine: str
    agent: str
    session_id: str
    digest: str
    entries: list[SyncEntry]
    title: str = ""
    project: str = ""
    team: str | None = None
    part: int = 0
    final: bool = True
    forked_from: str | None = None
    #: the effective branch's last entry (its place in the upload), when entries after
    #: it are abandoned branches; default: the last entry
    head: int | None = None


_PART_DECODER = msgspec.json.Decoder(SyncPart)


def decode_part(raw: bytes, max_depth: int) -> SyncPart:
    """The typed request, or one clear line (which field is wrong, never its value)."""
    try:
        return _PART_DECODER.decode(raw)
    except RecursionError:
        raise QueryError(f"the request body nests deeper than {max_depth} levels") from None
    except msgspec.ValidationError as exc:
        raise QueryError(f"the sync request is malformed: {exc}") from None
    except msgspec.DecodeError:
        raise QueryError("the request body must be JSON") from None


def _synced_entry(item: SyncEntry) -> NewEntry:
    """What an append stores for an entry sent by ``convodex sync``: the payload text as
    sent (already compact JSON), parsed once for the role and the projected text."""
    raw = bytes(item.payload)
    try:
        text = raw.decode("utf-8")
        message = msgspec.json.decode(raw)
    except (UnicodeDecodeError, msgspec.DecodeError):
        raise QueryError("every entry needs a JSON payload") from None
    except RecursionError:
        raise QueryError("the payload nests too deeply") from None
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise QueryError("the payload must be a JSON object with a string role")
    # Every level of nesting opens with a bracket: a payload with few of them (nearly
    # all) cannot nest too deeply, and is not walked.
    if raw.count(b"{") + raw.count(b"[") > PAYLOAD_DEPTH and deeper_than(message, PAYLOAD_DEPTH):
        raise QueryError("the payload nests too deeply")
    # Decoded from UTF-8, the text holds no lone surrogate: only NUL is left to refuse.
    if "\x00" in text:
        raise InvalidInput("the payload must not contain NUL")
    storable_text(message["role"], "the payload's role")
    shown = row_text(message, meta=False, discarded=False)
    return NewEntry(
        payload=text,
        payload_hash=hashlib.sha256(raw).hexdigest(),
        role=message["role"],
        meta=False,
        text=shown,
        tokens=None if shown is None else indexed_tokens(shown),
    )


def hub_session_id(owner_id: str, machine: str, agent: str, local_id: str) -> str:
    """The hub id of a synced session: stable, and distinct per owner and machine."""
    key = "\x00".join((owner_id, machine, agent, local_id)).encode("utf-8")
    return "sync_" + hashlib.sha256(key).hexdigest()[:40]


def _key(caller: Caller, machine: str, agent: str, local_id: str) -> str:
    check_id(machine, "machine")
    check_id(agent, "agent")
    check_id(local_id, "sessionId")
    return hub_session_id(caller.id, machine, agent, local_id)


def _rows(entries: Sequence[Mapping[str, Any] | SyncEntry]) -> list[tuple[Any, ...]]:
    """``(role, payload, hash, text, created_at, tokens, parent)`` per entry, checked
    before any SQL."""
    rows = []
    for item in entries:
        created: object
        parent: object
        if isinstance(item, SyncEntry):
            entry, created, parent = _synced_entry(item), item.created_at, item.parent
        else:
            payload = item.get("payload")
            if not isinstance(payload, Mapping):
                raise QueryError("every entry needs a payload object")
            entry, created = new_entry(payload, meta=False), item.get("createdAt")
            parent = item.get("parent")
        created = check_int64(created, "createdAt")
        if parent is not None:
            parent = check_int64(parent, "parent")
        rows.append(
            (entry.role, entry.payload, entry.payload_hash, entry.text, created, entry.tokens,
             parent)
        )  # fmt: skip
    return rows


def _locked(tx: Tx, session_id: str) -> tuple[Any, ...] | None:
    return tx.one(
        "SELECT owner_id, fork_state, sync_digest, deleted_at, team_id FROM sessions WHERE id = ?"
        + tx.dialect.for_update,
        (session_id,),
    )


def store_part(
    db: Database,
    caller: Caller,
    *,
    machine: str,
    agent: str,
    local_id: str,
    title: str,
    project: str,
    team: str | None,
    digest: str,
    part: int,
    final: bool,
    entries: Sequence[Mapping[str, Any] | SyncEntry],
    forked_from: str | None = None,
    head: int | None = None,
) -> tuple[str, str]:
    """Store one part of a session's upload; return ``(hub id, state)``.
    ``forked_from`` is the local id of the session it came from (same machine and
    agent): the hub copy records that one's hub id. ``head`` (the final part's) is the
    effective branch's last entry when abandoned branches follow it: the journal's
    active branch is then the chain to it, the others stay as its branches."""
    session_id = _key(caller, machine, agent, local_id)
    parent = None if forked_from is None else _key(caller, machine, agent, forked_from)
    storable_text(title, "title")
    storable_text(project, "project")
    if not isinstance(digest, str) or not 0 < len(digest) <= MAX_DIGEST:
        raise QueryError("digest must be a short non-empty string")
    check_int64(part, "part")
    if head is not None:
        check_int64(head, "head", minimum=1)
    rows = _rows(entries)
    with db.write() as tx:
        found = _locked(tx, session_id)
        if found is not None and found[0] != caller.id:
            raise AccessDenied("this session belongs to another account")
        if found is not None and found[3] is not None:
            return session_id, DELETED
        if part == 0:
            if found is not None and found[1] == "complete" and found[2] == digest:
                return session_id, UNCHANGED
            tid = None if team is None else member_team(tx, caller.id, team)
            facts = (title, project, machine, agent, tid, parent)
            _reset(tx, session_id, caller, found is not None, facts)
            start = 0
        else:
            if found is None or found[1] != "copying":
                raise Conflict("the upload of this session must start again at part 0")
            tid = found[4]
            top = tx.one("SELECT MAX(seq) FROM entries WHERE session_id = ?", (session_id,))
            start = int(top[0] or 0) if top is not None else 0
        end = start + len(rows)
        if final and head is not None and head > end:
            raise QueryError("head must name an entry of the upload")
        _append(tx, session_id, caller, tid, start, rows)
        # One statement moves the head and, with the final part, completes the session.
        sets = ["head_seq = COALESCE(?, head_seq)"]
        params: list[object] = [(head if final and head else end) or None]
        if rows:
            stamp = tx.ts(max(int(row[4]) for row in rows))
            sets.append(
                "updated_at = CASE WHEN updated_at IS NULL OR updated_at < ? THEN ?"
                " ELSE updated_at END"
            )
            params += [stamp, stamp]
        if final:
            sets.append("fork_state = 'complete', sync_digest = ?")
            params.append(digest)
        tx.run(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*params, session_id))
        if final and head is not None and head != end:
            recompute_branch(tx, session_id, head)
    return session_id, STORED


def _reset(tx: Tx, session_id: str, caller: Caller, exists: bool, facts: tuple[Any, ...]) -> None:
    """An empty ``copying`` session with the given title, project, machine, agent, team
    and the session it came from."""
    if exists:
        tx.run("DELETE FROM entries WHERE session_id = ?", (session_id,))
        tx.run(
            "UPDATE sessions SET title = ?, project = ?, machine = ?, agent = ?, team_id = ?,"
            " forked_from = ?, fork_state = 'copying', sync_digest = NULL, head_seq = NULL,"
            " updated_at = NULL WHERE id = ?",
            (*facts, session_id),
        )
        return
    tx.run(
        "INSERT INTO sessions (id, owner_id, kind, title, project, machine, agent, team_id,"
        " forked_from, created_at, fork_state) VALUES (?, ?, 'personal', ?, ?, ?, ?, ?, ?, ?,"
        " 'copying')",
        (session_id, caller.id, *facts, tx.ts(now_micros())),
    )


def _append(
    tx: Tx,
    session_id: str,
    caller: Caller,
    team_id: str | None,
    start: int,
    rows: list[tuple[Any, ...]],
) -> None:
    """Append ``rows`` after entry ``start`` (0: none): each continues the entry before
    it, or the earlier one it names (an abandoned branch's first entry)."""
    if not rows:
        return
    for n, row in enumerate(rows, start + 1):
        if row[6] is not None and row[6] >= n:
            raise QueryError("an entry's parent must come before it")
    tx.insert(
        "entries",
        ENTRY_COLUMNS,
        [
            (
                session_id,
                start + n,
                tx.ts(created),
                (parent or None) if parent is not None else (start + n - 1 or None),
                role,
                payload,
                digest,
                False,
                False,
                True,
                True,
                text,
                caller.id,
                team_id,
                tx.dialect.tokens_param(tokens),
            )
            for n, (role, payload, digest, text, created, tokens, parent) in enumerate(rows, 1)
        ],
    )


def delete_synced(db: Database, caller: Caller, *, machine: str, agent: str, local_id: str) -> str:
    """Delete a synced session for good: its entries go, a tombstone keeps its key."""
    session_id = _key(caller, machine, agent, local_id)
    with db.write() as tx:
        found = _locked(tx, session_id)
        if found is not None and found[0] != caller.id:
            raise AccessDenied("this session belongs to another account")
        stamp = tx.ts(now_micros())
        if found is None:
            tx.run(
                "INSERT INTO sessions (id, owner_id, kind, title, machine, agent, created_at,"
                " fork_state, deleted_at) VALUES (?, ?, 'personal', '', ?, ?, ?, 'complete', ?)",
                (session_id, caller.id, machine, agent, stamp, stamp),
            )
        elif found[3] is None:
            tx.run("DELETE FROM entries WHERE session_id = ?", (session_id,))
            tx.run(
                "UPDATE sessions SET title = '', project = '', deleted_at = ?, head_seq = NULL,"
                " sync_digest = NULL, team_id = NULL WHERE id = ?",
                (stamp, session_id),
            )
    return session_id
