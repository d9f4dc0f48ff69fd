"""Hermes Agent (NousResearch): ``$HERMES_HOME`` (``~/.hermes``) on every OS.

**state.db** (current; named profiles ``profiles/<profile>/state.db``), SQLite:
``messages`` (``session_id``, ``role`` user / assistant / tool / session_meta,
``content``, ``tool_calls`` as JSON text in OpenAI's shape, ``tool_call_id``,
``tool_name``, ``timestamp`` REAL seconds) and, in full stores, ``sessions`` (``id``,
``title``, ``parent_session_id`` for a ``delegate_task`` sub-agent, ``cwd``). The
database is one source holding every session: each message names its session, and a
message's locator is its row id. It is read through ``sqlitedb`` (read-only, short
queries) and rebuilt whenever the database or its ``-wal`` changes.

**Session snapshots**: ``sessions/session_*.json`` ``{session_id, platform,
session_start, last_updated, cwd, messages: [...]}`` with the same OpenAI-style
messages; each message's span is its array element.

Messaging-gateway sessions (Telegram, Slack …) share the store. Conversations are
linear.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.errors import SourceError
from convodex.sources import drift, jsonspan, sqlitedb
from convodex.sources.base import (
    LOCATOR_CHECKPOINT,
    Budget,
    FileStat,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
    load_message,
    messages_at,
    open_source,
    read_at,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.content import Parts
from convodex.sqlite import sqlite3

NAME = "hermes"
DATABASE = "state.db"
SNAPSHOTS = "sessions"
# The columns that make a ``state.db`` Hermes's (other tools use the name too).
_MESSAGE_COLUMNS = frozenset({"session_id", "role", "content", "tool_calls", "tool_call_id"})


class _Message(msgspec.Struct):
    role: str | None = None
    content: Any = None
    tool_calls: Any = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    name: str | None = None


class _Snapshot(msgspec.Struct):
    """A snapshot's facts; its messages are skipped unread."""

    session_id: str | None = None
    session_start: str | None = None
    last_updated: str | None = None
    cwd: str | None = None


_decode_message = msgspec.json.Decoder(_Message).decode
_decode_snapshot = msgspec.json.Decoder(_Snapshot).decode
_decode_any = msgspec.json.Decoder().decode


# The roles Hermes writes; any other is format drift (``drift``).
ROLES = frozenset({"user", "assistant", "tool", "system", "session_meta"})


def _calls(value: Any) -> list[Any]:
    """``tool_calls`` as stored: a list, or (in the database) its JSON text."""
    if isinstance(value, str) and value.strip():
        try:
            value = _decode_any(value)
        except msgspec.DecodeError:
            return []
    return value if isinstance(value, list) else []


def documents(msg: _Message, names: dict[str, str]) -> tuple[str, list[Any]]:
    """Role and documents of one OpenAI-style message (session metadata has none)."""
    parts = Parts(names)
    role = msg.role or ""
    if role == "tool":
        text = msg.content if isinstance(msg.content, str) else ""
        if text:
            parts.result(msg.tool_call_id, msg.tool_name or msg.name, text)
        return "tool", parts.docs
    if role not in ("user", "assistant"):
        if role and role not in ROLES:
            drift.note(drift.RECORD, role)  # a new kind of message: its words are kept
            parts.blocks(msg.content)
            return role, parts.build("assistant")[1]
        return role, []
    parts.blocks(msg.content)
    for call in _calls(msg.tool_calls):
        if isinstance(call, dict):
            function = call.get("function")
            if not isinstance(function, dict):
                function = {}
            parts.call(call.get("id"), function.get("name"), function.get("arguments"))
    return parts.build(role)


# -- the database --------------------------------------------------------------------

_SESSION_COLUMNS = "SELECT name FROM pragma_table_info('sessions')"
_COLUMNS = "id, session_id, role, content, tool_calls, tool_call_id, tool_name, timestamp"
_ROWS = f"SELECT {_COLUMNS} FROM messages ORDER BY session_id, timestamp, id"
_ROW = f"SELECT {_COLUMNS} FROM messages WHERE id = ?"
_CALLS = "SELECT tool_calls FROM messages WHERE session_id = ? AND tool_calls LIKE ?"


class _Session(msgspec.Struct):
    title: str | None = None
    subagent: bool = False


def _sessions(db: sqlite3.Connection) -> dict[str, _Session]:
    """Titles and sub-agent marks by session id (a store without ``sessions``: none)."""
    columns = {row["name"] for row in sqlitedb.rows(db, _SESSION_COLUMNS)}
    if "id" not in columns:
        return {}
    title = "title" if "title" in columns else "NULL"
    parent = "parent_session_id" if "parent_session_id" in columns else "NULL"
    sql = f"SELECT id, {title} AS title, {parent} AS parent FROM sessions"  # column names only
    return {
        str(row["id"]): _Session(row["title"] or None, bool(row["parent"]))
        for row in sqlitedb.rows(db, sql)
    }


def _row_message(
    row: sqlite3.Row, index: int, sessions: dict[str, _Session], names: dict[str, str]
) -> SourceMessage | None:
    msg = _Message(
        role=row["role"],
        content=row["content"],
        tool_calls=row["tool_calls"],
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
    )
    role, docs = documents(msg, names)
    if not docs:
        return None  # session metadata, a tool row without content
    seconds = row["timestamp"]
    created = int(seconds * 1000) if isinstance(seconds, int | float) else None
    size = sum(len(v) for v in (row["content"], row["tool_calls"]) if isinstance(v, str))
    message = SourceMessage(index, int(row["id"]), max(size, 1), role, created, docs)
    session = sessions.get(str(row["session_id"]), _Session())
    message.session_id = str(row["session_id"])
    message.title = session.title
    message.subagent = session.subagent
    return message


def _read_db(path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
    with sqlitedb.reading(path) as db:
        sessions = _sessions(db)
        rows = sqlitedb.rows(db, _ROWS)
    names: dict[str, str] = {}
    for row in rows:
        budget.check(path, "record", len(row["content"] or ""))
        message = _row_message(row, result.next_index, sessions, names)
        if message is None:
            continue
        result.bytes_read += message.length
        result.next_index += 1
        yield message


def _load_db(path: Path, rowid: int, index: int) -> SourceMessage | None:
    with sqlitedb.reading(path) as db:
        found = sqlitedb.rows(db, _ROW, (rowid,))
        if not found:
            return None
        names: dict[str, str] = {}
        call_id = found[0]["tool_call_id"]
        if found[0]["role"] == "tool" and call_id and not found[0]["tool_name"]:
            for row in sqlitedb.rows(db, _CALLS, (found[0]["session_id"], f"%{call_id}%")):
                documents(_Message(role="assistant", tool_calls=row["tool_calls"]), names)
        return _row_message(found[0], index, _sessions(db), names)


def is_store(path: Path) -> bool:
    """Whether a ``state.db`` is Hermes's: its ``messages`` table has Hermes's columns."""
    try:
        with sqlitedb.reading(path) as db:
            rows = sqlitedb.rows(db, "SELECT name FROM pragma_table_info('messages')")
    except (OSError, SourceError):
        return False
    return _MESSAGE_COLUMNS <= {row["name"] for row in rows}


# -- the snapshots -------------------------------------------------------------------


def _load_snapshot(handle: BinaryIO, offset: int, length: int, index: int) -> SourceMessage | None:
    raw = read_at(handle, offset, length)
    if raw is None:
        return None
    try:
        msg = _decode_message(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    role, docs = documents(msg, {})
    return SourceMessage(index, offset, length, role, None, docs)


class HermesFormat(SourceFormat):
    """Reader for Hermes Agent's ``state.db`` and session snapshots; rebuilt on change."""

    name = NAME
    support = Support(
        agent="Hermes Agent (NousResearch)",
        versions="`state.db` of 0.19, session snapshots",
        where="`~/.hermes/state.db`, `~/.hermes/profiles/<profile>/state.db`, "
        "`~/.hermes/sessions/` (`$HERMES_HOME`), every OS",
        branches="linear",
        subagents="child sessions (`parent_session_id`), apart",
        gaps="native `sessions/*.jsonl` transcripts (no sample); NeMo Relay ATIF exports",
    )
    append_only = False
    resume: str | None = "hermes --resume {id}"
    handoff: str | None = None
    source_names = frozenset({DATABASE})

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """``state.db`` (elsewhere: one whose messages table is Hermes's) and, under its
        root, the snapshots in ``sessions/``; elsewhere their keys tell."""
        if path.name == DATABASE:
            return fixed or is_store(path)
        if not fixed:
            return None
        return path.name.endswith(".json") and path.parent.name == SNAPSHOTS

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        if path.name.endswith(".db"):
            result.end_offset = LOCATOR_CHECKPOINT
            yield from _read_db(path, result, budget)
            return
        spans = jsonspan.array_spans(path, result, budget, ("messages",))
        with open_source(path) as handle:
            yield from messages_at(handle, spans, result, _load_snapshot)

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        if path.name.endswith(".db"):
            with contextlib.suppress(SourceError):
                return _load_db(path, offset, index)
            return None
        return load_message(path, offset, length, index, _load_snapshot)

    def info(self, path: Path) -> SessionInfo:
        if path.name.endswith(".db"):
            return SessionInfo(session_id=NAME)  # its messages name their own sessions
        info = SessionInfo(session_id=path.stem)
        try:
            snapshot = _decode_snapshot(path.read_bytes())
        except (OSError, msgspec.DecodeError, RecursionError):
            return info
        info.session_id = snapshot.session_id or path.stem
        info.workspace_root = snapshot.cwd or None
        info.created_at = parse_time(snapshot.session_start)
        info.updated_at = parse_time(snapshot.last_updated)
        return info

    def stat(self, path: Path, known: os.stat_result | None = None) -> FileStat:
        if path.name.endswith(".db"):
            return sqlitedb.stat(path)
        return super().stat(path, known)


FORMAT = HermesFormat()
