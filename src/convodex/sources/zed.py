"""Zed's agent threads: ``threads/threads.db`` in Zed's data directory.

``~/.local/share/zed`` (``$XDG_DATA_HOME/zed``) on Linux, ``~/Library/Application
Support/Zed`` on macOS, ``%LOCALAPPDATA%\\Zed`` on Windows. SQLite: ``threads(id,
summary, updated_at, data_type, data, parent_id?, folder_paths?, created_at?)``, one
row a thread; ``data`` is the thread's JSON, zstd-compressed when ``data_type`` is
``zstd`` (Zed rewrites a row's encoding only when it saves the thread again, so
stores mix both). Thread JSON 0.2.0: ``{summary, messages: [{role, segments: [{type:
text | thinking, text}], tool_uses?, tool_results?}]}``; 0.3.0 and later: ``{title,
messages: [{"User": {content: [{"Text": …}, …]}} | {"Agent": {content: [{"Text": …} |
{"Thinking": …} | {"ToolUse": {id, name, input}}], tool_results: {id: {tool_name,
is_error, content}}}} | "Resume"]}`` (Rust's externally tagged enums). Thinking is
never indexed; an answer's tool results are a tool message after it. A thread with a
``parent_id`` is a sub-agent's, kept apart. The database is one source holding every
thread; a message's locator is its row id and its place in the thread. No
per-message times are stored.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from convodex.errors import SourceError
from convodex.sources import drift, sqlitedb
from convodex.sources.base import (
    LOCATOR_CHECKPOINT,
    Budget,
    FileStat,
    LineError,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
)
from convodex.sources.content import Parts, block_text
from convodex.sources.jsonl import error_class
from convodex.sqlite import sqlite3

NAME = "zed"
DATABASE = "threads.db"
# locator = row id << POSITION_BITS | message position << 1 | (1 for its tool results)
POSITION_BITS = 24
_POSITION_MASK = (1 << POSITION_BITS) - 1
_THREAD_COLUMNS = frozenset({"id", "data_type", "data"})
# The enum variants and segment types Zed writes (``thread.rs``): any other is format
# drift (``drift``), counted with its text kept. A mention's file body is not the
# conversation's words; an image has none.
MESSAGE_TAGS = frozenset({"User", "Agent", "Resume"})
USER_PARTS = frozenset({"Text", "Image", "Mention"})
AGENT_PARTS = frozenset({"Text", "Thinking", "RedactedThinking", "ToolUse"})
SEGMENT_TYPES = frozenset({"text", "thinking", "redacted_thinking"})
_ROWS = "SELECT rowid, * FROM threads ORDER BY updated_at, id"
_ROW = "SELECT rowid, * FROM threads WHERE rowid = ?"

_decode_thread = msgspec.json.Decoder(dict[str, Any]).decode


class CorruptThread(ValueError):
    """A row whose zstd frame does not decompress."""


def _json(row: sqlite3.Row, budget: Budget, path: Path) -> bytes:
    """A thread's JSON, decompressed when stored as zstd (within the record budget)."""
    data = row["data"]
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data or b"")
    if row["data_type"] != "zstd":
        budget.check(path, "record", len(raw))
        return raw
    import zstandard  # only stores that hold compressed threads pay for the import

    limit = budget.max_record_bytes
    try:
        with zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            out = reader.read(limit + 1)
    except zstandard.ZstdError as exc:
        raise CorruptThread("not a zstd frame") from exc
    budget.check(path, "record", len(out))
    return out


def _tag(item: Any) -> tuple[str | None, Any]:
    """An externally tagged enum value: ``{"Text": …}`` → ``("Text", …)``."""
    if isinstance(item, dict) and len(item) == 1:
        ((tag, value),) = item.items()
        return str(tag), value
    return (item, None) if isinstance(item, str) else (None, None)


def _result_text(content: Any) -> str:
    tag, value = _tag(content)
    if tag == "Text" and isinstance(value, str):
        return value
    return block_text(content) if tag is None else block_text(value)


def _unknown(parts: Parts, kind: Any, body: Any) -> None:
    """A content part of a kind not known: counted (``drift``), its text kept."""
    drift.note(drift.BLOCK, kind)
    if isinstance(body, dict):
        body = body.get("text", body.get("content"))
    parts.text(block_text(body))


class _Thread:
    """One thread's messages as (role, parts) in order, positions kept."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.title = data.get("title") or data.get("summary") or None
        self.messages: list[tuple[int, str, Parts]] = []
        for position, message in enumerate(data.get("messages") or ()):
            if isinstance(message, dict) and "role" in message:
                self._legacy(position, message)
                continue
            tag, value = _tag(message)
            if tag == "User" and isinstance(value, dict):
                parts = Parts()
                for item in value.get("content") or ():
                    kind, text = _tag(item)
                    if kind == "Text":
                        parts.text(text)
                    elif kind not in USER_PARTS:
                        _unknown(parts, kind, text)
                self.messages.append((position << 1, "user", parts))
            elif tag == "Agent" and isinstance(value, dict):
                self._agent(position, value)
            elif tag not in MESSAGE_TAGS:
                drift.note(drift.RECORD, tag)
                if isinstance(value, dict):  # a new kind of message: its words are kept
                    parts = Parts()
                    for item in value.get("content") or ():
                        kind, text = _tag(item)
                        if kind == "Text":
                            parts.text(text)
                    self.messages.append((position << 1, "assistant", parts))

    def _agent(self, position: int, value: dict[str, Any]) -> None:
        parts = Parts()
        for item in value.get("content") or ():
            kind, body = _tag(item)
            if kind == "Text":
                parts.text(body)
            elif kind == "ToolUse" and isinstance(body, dict):
                parts.call(body.get("id"), body.get("name"), body.get("input"))
            elif kind not in AGENT_PARTS:
                _unknown(parts, kind, body)
        self.messages.append((position << 1, "assistant", parts))
        results = value.get("tool_results")
        if isinstance(results, dict) and results:
            tool = Parts(parts.names)
            for call_id, result in results.items():
                if isinstance(result, dict):
                    text = _result_text(result.get("content"))
                    name = result.get("tool_name")
                    tool.result(call_id, name, text, result.get("is_error") is True)
            self.messages.append(((position << 1) | 1, "user", tool))

    def _legacy(self, position: int, message: dict[str, Any]) -> None:
        parts = Parts()
        for segment in message.get("segments") or ():
            if isinstance(segment, dict) and segment.get("type") == "text":
                parts.text(segment.get("text"))
            elif isinstance(segment, dict) and segment.get("type") not in SEGMENT_TYPES:
                _unknown(parts, segment.get("type"), segment.get("text"))
        for use in message.get("tool_uses") or ():
            if isinstance(use, dict):
                parts.call(use.get("id"), use.get("name"), use.get("input"))
        self.messages.append((position << 1, str(message.get("role") or ""), parts))
        results = message.get("tool_results") or ()
        if results:
            tool = Parts(parts.names)
            for result in results:
                if isinstance(result, dict):
                    text = _result_text(result.get("content"))
                    flagged = result.get("is_error") is True
                    tool.result(result.get("tool_use_id"), None, text, flagged)
            self.messages.append(((position << 1) | 1, "user", tool))


def _message(
    row: sqlite3.Row, thread: _Thread, place: int, role: str, parts: Parts, index: int
) -> SourceMessage:
    role, docs = parts.build(role)
    rowid = int(row["rowid"])
    message = SourceMessage(index, (rowid << POSITION_BITS) | place, 1, role, None, docs)
    message.session_id = str(row["id"])
    message.title = thread.title or row["summary"] or None
    message.subagent = bool(sqlitedb.column(row, "parent_id"))
    return message


def _thread(row: sqlite3.Row, budget: Budget, path: Path) -> tuple[_Thread, int]:
    """A row's thread and the size of its JSON."""
    raw = _json(row, budget, path)
    return _Thread(_decode_thread(raw)), len(raw)


_BROKEN = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, CorruptThread)


def is_store(path: Path) -> bool:
    """Whether a ``threads.db`` is Zed's (its ``threads`` table has Zed's columns)."""
    try:
        with sqlitedb.reading(path) as db:
            rows = sqlitedb.rows(db, "SELECT name FROM pragma_table_info('threads')")
    except (OSError, SourceError):
        return False
    return _THREAD_COLUMNS <= {row["name"] for row in rows}


class ZedFormat(SourceFormat):
    """Reader for Zed's thread store; rebuilt on any change."""

    name = NAME
    support = Support(
        agent="Zed agent threads",
        versions="thread JSON 0.2.0 and 0.3.0, plain and zstd",
        where="`threads/threads.db` in `~/.local/share/zed` (`$XDG_DATA_HOME`) on Linux, "
        "`~/Library/Application Support/Zed` on macOS, `%LOCALAPPDATA%\\Zed` on Windows",
        branches="linear (the thread as saved)",
        subagents="threads with a `parent_id`, apart",
        gaps="no per-message times (the thread's only)",
    )
    append_only = False
    source_names = frozenset({DATABASE})

    def claims(self, path: Path, fixed: bool) -> bool:
        if path.name != DATABASE:
            return False
        return fixed or is_store(path)

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        result.end_offset = LOCATOR_CHECKPOINT
        with sqlitedb.reading(path) as db:
            rows = sqlitedb.rows(db, _ROWS)
        for row in rows:
            try:
                thread, size = _thread(row, budget, path)
            except _BROKEN as exc:  # one broken thread fails alone
                result.errors.append(LineError(int(row["rowid"]), error_class(exc)))
                continue
            result.bytes_read += size
            for place, role, parts in thread.messages:
                message = _message(row, thread, place, role, parts, result.next_index)
                if not message.documents:
                    continue
                result.next_index += 1
                yield message

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        rowid, place = offset >> POSITION_BITS, offset & _POSITION_MASK
        with contextlib.suppress(SourceError):
            with sqlitedb.reading(path) as db:
                found = sqlitedb.rows(db, _ROW, (rowid,))
            if not found:
                return None
            try:
                thread, _ = _thread(found[0], Budget.from_env(), path)
            except _BROKEN:  # broken since it was indexed
                return None
            for at, role, parts in thread.messages:
                if at == place:
                    return _message(found[0], thread, place, role, parts, index)
        return None

    def info(self, path: Path) -> SessionInfo:
        return SessionInfo(session_id=NAME)  # its messages name their own threads

    def stat(self, path: Path, known: os.stat_result | None = None) -> FileStat:
        return sqlitedb.stat(path)


FORMAT = ZedFormat()
