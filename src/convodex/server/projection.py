"""Shown text → search rows (SPEC S2), always inside the caller's journal transaction.

The projected text lives in ``entries.text`` (``search_rows`` is a view of the
entries that have one), so an entry and its search row are written by the same
statement and can never disagree.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from convodex.errors import InvalidInput, QueryError
from convodex.server.db import Database, Tx
from convodex.server.inputs import storable_text
from convodex.text.shown import SHOWN_ROLES, projected_text
from convodex.text.tokens import indexed_tokens


class NewEntry(NamedTuple):
    """What an append writes: the payload as stored, its hash, and its search text."""

    payload: str
    payload_hash: str
    role: str
    meta: bool
    #: the search row's text, or ``None`` when the entry gets no row
    text: str | None
    #: the row's tokens for ranked search (L3), ``None`` with no row
    tokens: list[str] | None = None


def parse_payload(payload: str | Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(original JSON text, decoded message)`` for a payload given as text or object.

    Text is kept byte for byte (its hash is the journal's identity for it); an object
    is serialized once, compactly, without escaping non-ASCII characters.
    """
    try:
        if isinstance(payload, str):
            try:
                message = json.loads(payload)
            except ValueError:
                raise QueryError("the payload is not valid JSON") from None
            text = storable_text(payload, "the payload")
        else:
            message = dict(payload)
            text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
            try:
                storable_text(text, "the payload")
            except InvalidInput:
                # Lone surrogates survive only as JSON escapes.
                text = json.dumps(message, separators=(",", ":"))
    except RecursionError:
        raise QueryError("the payload nests too deeply") from None
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise QueryError("the payload must be a JSON object with a string role")
    storable_text(message["role"], "the payload's role")
    return text, message


def payload_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def row_text(message: Mapping[str, Any], *, meta: bool, discarded: bool) -> str | None:
    """The search row text for an entry, or ``None`` when the entry gets no row."""
    if meta or discarded or message.get("role") not in SHOWN_ROLES:
        return None
    return projected_text(message)


def new_entry(payload: str | Mapping[str, Any], *, meta: bool) -> NewEntry:
    """Everything an append stores, computed before its transaction starts."""
    text, message = parse_payload(payload)
    shown = row_text(message, meta=meta, discarded=False)
    return NewEntry(
        payload=text,
        payload_hash=payload_hash(text),
        role=str(message["role"]),
        meta=meta,
        text=shown,
        tokens=None if shown is None else indexed_tokens(shown),
    )


def refresh_entry(tx: Tx, session_id: str, seq: int) -> None:
    """Recompute one entry's search row from its stored payload and flags."""
    row = tx.one(
        "SELECT row_id, payload, meta, discarded FROM entries WHERE session_id = ? AND seq = ?",
        (session_id, seq),
    )
    if row is None:
        return
    row_id, payload, meta, discarded = row
    text = row_text(json.loads(payload), meta=bool(meta), discarded=bool(discarded))
    tokens = tx.dialect.tokens_param(None if text is None else indexed_tokens(text))
    tx.run(
        f"UPDATE entries SET text = ?, tokens = {tx.dialect.tokens_sql}, projected = TRUE"
        " WHERE row_id = ?",
        (text, tokens, row_id),
    )


#: entries one backfill transaction fills (short: writers queue behind it on SQLite)
BACKFILL_BATCH = 500


def backfill_tokens(db: Database, batch: int = BACKFILL_BATCH) -> int:
    """Give ranked search the entries written before it existed (migration 0004 left
    their tokens empty; literal search always found them): each search row without
    tokens gets them from its own text, a batch per transaction, oldest row first.
    Safe beside live writes (an entry written since has its tokens already; one
    rewritten meanwhile is recomputed from its new text). Returns the rows filled."""
    filled, after = 0, 0
    while True:
        with db.write() as tx:
            rows = tx.all(
                "SELECT row_id, session_id, text FROM entries WHERE row_id > ?"
                " AND text IS NOT NULL AND tokens IS NULL ORDER BY row_id LIMIT ?",
                (after, batch),
            )
            if not rows:
                return filled
            tx.many(
                f"UPDATE entries SET tokens = {tx.dialect.tokens_sql}"
                " WHERE row_id = ? AND session_id = ? AND text = ? AND tokens IS NULL",
                [
                    (tx.dialect.tokens_param(indexed_tokens(str(text))), row_id, sid, text)
                    for row_id, sid, text in rows
                ],
            )
        filled += len(rows)
        after = int(rows[-1][0])
