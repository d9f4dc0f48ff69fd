"""Shown text → search rows (SPEC S2), always inside the caller's journal transaction."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from convodex.errors import QueryError
from convodex.server.db import Tx
from convodex.text.shown import SHOWN_ROLES, projected_text


def parse_payload(payload: str | Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(original JSON text, decoded message)`` for a payload given as text or object.

    Text is kept byte for byte (its hash is the journal's identity for it); an object
    is serialized once, compactly, without escaping non-ASCII characters.
    """
    if isinstance(payload, str):
        try:
            message = json.loads(payload)
        except ValueError:
            raise QueryError("the payload is not valid JSON") from None
        text = payload
        if not _encodable(text):
            raise QueryError("the payload is not valid UTF-8 text")
    else:
        message = dict(payload)
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        if not _encodable(text):
            # Lone surrogates survive only as JSON escapes.
            text = json.dumps(message, separators=(",", ":"))
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise QueryError("the payload must be a JSON object with a string role")
    return text, message


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def payload_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def row_text(message: Mapping[str, Any], *, meta: bool, discarded: bool) -> str | None:
    """The search row text for an entry, or ``None`` when the entry gets no row."""
    if meta or discarded or message.get("role") not in SHOWN_ROLES:
        return None
    return projected_text(message)


def insert_row(
    tx: Tx,
    row_id: int,
    session_id: str,
    seq: int,
    created_at: int,
    text: str | None,
    *,
    mark_projected: bool = True,
) -> None:
    """Write an entry's search row (if it has one) and mark the entry as projected."""
    if text is not None:
        tx.run(
            "INSERT INTO search_rows (row_id, session_id, seq, created_at, text)"
            " VALUES (?, ?, ?, ?, ?)",
            (row_id, session_id, seq, tx.ts(created_at), text),
        )
    if mark_projected:
        tx.run("UPDATE entries SET projected = TRUE WHERE row_id = ? AND NOT projected", (row_id,))


def refresh_entry(tx: Tx, session_id: str, seq: int) -> None:
    """Recompute one entry's search row from its stored payload and flags."""
    row = tx.one(
        "SELECT row_id, created_at, payload, meta, discarded FROM entries"
        " WHERE session_id = ? AND seq = ?",
        (session_id, seq),
    )
    tx.run("DELETE FROM search_rows WHERE session_id = ? AND seq = ?", (session_id, seq))
    if row is None:
        return
    row_id, created_at, payload, meta, discarded = row
    message = json.loads(payload)
    text = row_text(message, meta=bool(meta), discarded=bool(discarded))
    insert_row(tx, int(row_id), session_id, seq, tx.dialect.ts_value(created_at), text)
