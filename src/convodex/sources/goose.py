"""Goose (Block): ``sessions.db`` in Goose's data directory (v1.20 and later).

``~/.local/share/goose/sessions/sessions.db`` (``$XDG_DATA_HOME``) on Linux and macOS,
``%APPDATA%\\Block\\goose\\data\\sessions\\sessions.db`` on Windows;
``$GOOSE_PATH_ROOT/data/sessions`` relocates it. SQLite: ``sessions`` (``id`` like
``20250724_2``, ``name``, ``description``, ``session_type``, ``working_dir``, times) and
``messages`` (``session_id``, ``role``, ``content_json``: an array of ``text``,
``toolRequest {id, toolCall: {status, value: {name, arguments}}}``, ``toolResponse
{id, toolResult: {status, value | error}}``, ``thinking``, ``image`` …,
``created_timestamp`` in seconds). The database is one source holding every session:
each message names its session, its locator is its row id; it is read through
``sqlitedb`` and rebuilt whenever it or its ``-wal`` changes. Conversations are
linear; a session whose ``session_type`` is not ``user`` (a sub-agent's, a scheduled
run's) is kept apart.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from convodex.errors import SourceError
from convodex.sources import sqlitedb
from convodex.sources.base import (
    LOCATOR_CHECKPOINT,
    Budget,
    FileStat,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
)
from convodex.sources.content import Parts, block_text
from convodex.sqlite import sqlite3

NAME = "goose"
DATABASE = "sessions.db"
_COLUMNS = "m.id, m.session_id, m.role, m.content_json, m.created_timestamp"
_FACTS = "s.name, s.description, s.user_set_name, s.session_type"
_ROWS = (
    f"SELECT {_COLUMNS}, {_FACTS} FROM messages m LEFT JOIN sessions s ON s.id = m.session_id"
    " ORDER BY m.session_id, m.created_timestamp, m.id"
)
_ROW = (
    f"SELECT {_COLUMNS}, {_FACTS} FROM messages m LEFT JOIN sessions s ON s.id = m.session_id"
    " WHERE m.id = ?"
)
_REQUESTS = (
    "SELECT content_json FROM messages WHERE session_id = ? AND content_json LIKE '%toolRequest%'"
)
_SESSION_COLUMNS = frozenset({"id", "working_dir"})
_MESSAGE_COLUMNS = frozenset({"session_id", "role", "content_json"})

_decode_content = msgspec.json.Decoder(list[Any]).decode
# The content types Goose writes (its ``MessageContent``); any other is format drift
# (``drift``), counted with its text kept.
CONTENT_TYPES = frozenset(
    {"text", "image", "toolRequest", "toolResponse", "toolConfirmationRequest"}
    | {"frontendToolRequest", "thinking", "redactedThinking", "contextLengthExceeded"}
    | {"summarizationRequested", "conversationCompacted", "systemNotification"}
)


def _result(value: Any) -> tuple[str, bool]:
    """A tool response's text and whether it failed."""
    if not isinstance(value, dict):
        return "", False
    if value.get("status") == "error":
        return str(value.get("error") or ""), True
    return block_text(value.get("value")), False


def documents(role: str, content: list[Any], names: dict[str, str]) -> tuple[str, list[Any]]:
    """Role and documents of one message; responses are named after their request."""
    parts = Parts(names)
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.text(block.get("text"))
        elif kind == "toolRequest":
            call = block.get("toolCall")
            value = call.get("value") if isinstance(call, dict) else None
            value = value if isinstance(value, dict) else {}
            parts.call(block.get("id"), value.get("name"), value.get("arguments"))
        elif kind == "toolResponse":
            text, failed = _result(block.get("toolResult"))
            parts.result(block.get("id"), None, text, failed)
        elif kind not in CONTENT_TYPES:
            parts.unknown(kind, block)
    return parts.build(role)


def _content(raw: str) -> list[Any]:
    try:
        return _decode_content(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return []


def _message(
    row: sqlite3.Row, index: int, budget: Budget, path: Path, names: dict[str, str]
) -> SourceMessage:
    raw = row["content_json"] or "[]"
    budget.check(path, "record", len(raw))
    role, docs = documents(str(row["role"]), _content(raw), names)
    seconds = row["created_timestamp"]
    created = int(seconds * 1000) if isinstance(seconds, int | float) else None
    message = SourceMessage(index, int(row["id"]), max(len(raw), 1), role, created, docs)
    message.session_id = str(row["session_id"])
    # Goose describes each session; a name the person set wins.
    named = row["user_set_name"]
    message.title = (row["name"] if named else row["description"] or row["name"]) or None
    message.subagent = row["session_type"] not in (None, "", "user")
    return message


def is_store(path: Path) -> bool:
    """Whether a ``sessions.db`` is Goose's (its tables have Goose's columns)."""
    try:
        with sqlitedb.reading(path) as db:
            sessions = sqlitedb.rows(db, "SELECT name FROM pragma_table_info('sessions')")
            messages = sqlitedb.rows(db, "SELECT name FROM pragma_table_info('messages')")
    except (OSError, SourceError):
        return False
    return _SESSION_COLUMNS <= {r["name"] for r in sessions} and _MESSAGE_COLUMNS <= {
        r["name"] for r in messages
    }


class GooseFormat(SourceFormat):
    """Reader for Goose's session database; rebuilt on any change."""

    name = NAME
    support = Support(
        agent="Goose (Block)",
        versions="`sessions.db` of v1.20 and later",
        where="`~/.local/share/goose/sessions/` (`$XDG_DATA_HOME`) on Linux and macOS, "
        "`%APPDATA%\\Block\\goose\\data\\sessions\\` on Windows (`$GOOSE_PATH_ROOT`)",
        branches="linear",
        subagents="sessions whose `session_type` is not `user`, apart",
        gaps="the JSONL sessions before v1.20 (no sample)",
    )
    append_only = False
    resume: str | None = "goose session --resume --session-id {id}"
    handoff: str | None = None
    source_names = frozenset({DATABASE})

    def claims(self, path: Path, fixed: bool) -> bool:
        if path.name != DATABASE:
            return False
        return fixed or is_store(path)

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        result.end_offset = LOCATOR_CHECKPOINT
        with sqlitedb.reading(path) as db:
            rows = sqlitedb.rows(db, _ROWS)
        names: dict[str, str] = {}  # filled in order: a request precedes its response
        for row in rows:
            message = _message(row, result.next_index, budget, path, names)
            if not message.documents:
                continue
            result.bytes_read += message.length
            result.next_index += 1
            yield message

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        with contextlib.suppress(SourceError):
            names: dict[str, str] = {}
            with sqlitedb.reading(path) as db:
                found = sqlitedb.rows(db, _ROW, (offset,))
                if found and "toolResponse" in (found[0]["content_json"] or ""):
                    for row in sqlitedb.rows(db, _REQUESTS, (found[0]["session_id"],)):
                        documents("assistant", _content(row["content_json"]), names)
            return _message(found[0], index, Budget.from_env(), path, names) if found else None
        return None

    def info(self, path: Path) -> SessionInfo:
        return SessionInfo(session_id=NAME)  # its messages name their own sessions

    def stat(self, path: Path, known: os.stat_result | None = None) -> FileStat:
        return sqlitedb.stat(path)


FORMAT = GooseFormat()
