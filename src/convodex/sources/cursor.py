"""Cursor's command-line agent (``cursor-agent``): transcripts and chat stores.

**Transcripts**: ``~/.cursor/projects/<project>/agent-transcripts/<id>.jsonl`` (or
``<id>/<id>.jsonl``), one message a line: ``{"role": …, "message": {"content":
[…]}}`` with ``text``, ``thinking``, ``tool_use`` (also ``tool_call``) and
``tool_result`` (also ``tool-result``) blocks; no ids or times. User text arrives
wrapped in ``<user_query>``, which is removed (injected ``<user_info>`` context is
not user text). Lines that are not messages (``{"type": "turn_ended"}``) are
skipped. Sub-agent transcripts sit in ``subagents/`` beside their parent's.

**Chat stores**: ``~/.cursor/chats/<md5 of the workspace>/<id>/store.db``, SQLite:
``meta`` (key ``0``: hex-encoded JSON with ``agentId``, ``name``, ``createdAt``,
``latestRootBlobId``) and content-addressed ``blobs``. The latest root blob is a
protobuf message whose field 1 lists the conversation's message blob ids (SHA-256)
in order and field 9 names the workspace URI; message blobs are JSON provider
messages (``role``, ``content`` string or ``text`` / ``tool-call`` / ``tool-result``
parts). A store's messages are indexed only when the session has no transcript:
newer versions write both, and the transcript is what the agent shows. Its title,
time and workspace name the transcript's session either way. A message's locator
is its position in the root blob's list.

Both are rebuilt on change (a store is rewritten in place; transcripts are small).
No branches are recorded: the transcript is the conversation.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

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
    nested_text,
    read_span,
)
from convodex.sources.jsonl import decoded_lines, error_class
from convodex.sqlite import sqlite3
from convodex.text.documents import (
    Document,
    arguments_text,
    tool_call_document,
    tool_result_document,
)

NAME = "cursor"
STORE = "store.db"
TRANSCRIPTS = "agent-transcripts"
_CALLS = frozenset({"tool_use", "tool_call", "tool-call"})
_RESULTS = frozenset({"tool_result", "tool-result"})
_TEXT_KEYS = ("text", "content", "result", "output")
_NO_TEXT_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning", "image"})
# The roles, blocks and marker lines the agent writes: any other is format drift
# (``drift``), counted, and an unknown block's visible text is kept.
ROLES = frozenset({"user", "assistant", "tool", "system"})
BLOCKS = _CALLS | _RESULTS | _NO_TEXT_TYPES | {"text"}
LINE_TYPES = frozenset({"turn_ended"})
_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)
_INJECTED = re.compile(r"<(user_info|attached_files|system_reminder)>.*?</\1>\s*", re.S)
# Protobuf field numbers of a root blob.
_ROOT_MESSAGES = 1
_ROOT_WORKSPACE = 9


class _Body(msgspec.Struct):
    content: Any = None


class _Line(msgspec.Struct):
    role: str | None = None
    type: str | None = None
    message: _Body | None = None


class _Blob(msgspec.Struct):
    role: str | None = None
    content: Any = None


class _Meta(msgspec.Struct):
    agentId: str | None = None
    name: str | None = None
    createdAt: Any = None
    latestRootBlobId: str | None = None


_decode_line = msgspec.json.Decoder(_Line).decode
_decode_blob = msgspec.json.Decoder(_Blob).decode
_decode_meta = msgspec.json.Decoder(_Meta).decode


def user_text(text: str) -> str:
    """What the person typed: the ``<user_query>`` bodies, else the text minus injected
    context blocks."""
    queries = _QUERY.findall(text)
    if queries:
        return "\n".join(queries)
    return _INJECTED.sub("", text)


def _result_text(value: Any) -> str:
    text = nested_text(value, _TEXT_KEYS, _NO_TEXT_TYPES)
    if not text and isinstance(value, dict):
        return arguments_text(value)  # a structured result without text fields
    return text


def documents(role: str, content: Any) -> tuple[str, list[Document]]:
    """Role and documents of one message's content (a string or a list of blocks)."""
    if role and role not in ROLES:
        drift.note(drift.RECORD, role)  # a new kind of message: its words are kept
    elif role not in ("user", "assistant", "tool"):
        return role, []
    texts: list[str] = []
    docs: list[Document] = []
    results = 0
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        name = block.get("name") or block.get("toolName")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind in _CALLS:
            args = block["input"] if "input" in block else block.get("args")
            docs.append(tool_call_document(len(docs) + 1, name, args))
        elif kind in _RESULTS:
            results += 1
            value = next((block[k] for k in ("content", "result", "output") if k in block), None)
            flagged = block.get("is_error") is True or block.get("isError") is True
            docs.append(tool_result_document(len(docs) + 1, name, _result_text(value), flagged))
        elif kind not in BLOCKS:
            drift.note(drift.BLOCK, kind)
            texts.append(nested_text(block, _TEXT_KEYS, _NO_TEXT_TYPES))
    text = "\n".join(t for t in texts if t)
    if role == "user":
        text = user_text(text)
    if text.strip() and role != "tool":
        docs.insert(0, Document(0, "user_text" if role == "user" else "assistant_text", text))
    elif results and results == len(docs):
        role = "tool"
    return role, docs


# -- transcripts ---------------------------------------------------------------------


def _line_message(value: _Line, offset: int, length: int, index: int) -> SourceMessage:
    content = value.message.content if value.message is not None else None
    role, docs = documents(value.role or "", content)
    return SourceMessage(index, offset, length, role, None, docs)


def _read_transcript(path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
    budget.check(path, "log", os.stat(path).st_size)
    for offset, length, _, value in decoded_lines(path, result, budget, _decode_line):
        if value.role is None:
            if value.type not in LINE_TYPES:
                drift.note(drift.RECORD, value.type)
            continue  # turn markers and other non-message lines
        message = _line_message(value, offset, length, result.next_index)
        result.next_index += 1
        yield message


def _load_transcript(path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
    raw = read_span(path, offset, length)
    if raw is None:
        return None
    try:
        value = _decode_line(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    return None if value.role is None else _line_message(value, offset, length, index)


def _cursor_home(transcript: Path) -> Path | None:
    """``~/.cursor`` from ``~/.cursor/projects/<project>/agent-transcripts/…``."""
    for parent in transcript.parents:
        if parent.name == TRANSCRIPTS:
            projects = parent.parent.parent
            return projects.parent if projects.name == "projects" else None
    return None


def _store_of(transcript: Path, session_id: str) -> Path | None:
    home = _cursor_home(transcript)
    if home is None:
        return None
    return next(iter((home / "chats").glob(f"*/{session_id}/{STORE}")), None)


def _has_transcript(store: Path, session_id: str) -> bool:
    """Whether a store's session also has a transcript (``~/.cursor/chats/<h>/<id>/``)."""
    chats = store.parent.parent.parent
    if chats.name != "chats":
        return False
    projects = chats.parent / "projects"
    pattern = f"*/{TRANSCRIPTS}/{session_id}"
    return any(projects.glob(f"{pattern}.jsonl")) or any(projects.glob(f"{pattern}/*.jsonl"))


# -- chat stores ---------------------------------------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def protobuf_fields(buf: bytes) -> Iterator[tuple[int, bytes]]:
    """(field number, bytes) of a protobuf message's length-delimited fields."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        wire = key & 7
        if wire == 0:
            _, pos = _varint(buf, pos)
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise ValueError("truncated field")
            yield key >> 3, buf[pos : pos + size]
            pos += size
        else:
            raise ValueError("unsupported wire type")


def _meta(db: sqlite3.Connection) -> _Meta:
    """The session meta: key ``0`` holds hex-encoded JSON (older stores: plain keys)."""
    values = {str(r["key"]): r["value"] for r in sqlitedb.rows(db, "SELECT key, value FROM meta")}
    raw = values.get("0")
    if isinstance(raw, str | bytes):
        try:
            return _decode_meta(bytes.fromhex(raw.decode() if isinstance(raw, bytes) else raw))
        except (ValueError, msgspec.DecodeError):
            pass
    name = values.get("name")
    return _Meta(name=name if isinstance(name, str) else None)


def _blob(db: sqlite3.Connection, blob_id: str) -> bytes | None:
    found = sqlitedb.rows(db, "SELECT data FROM blobs WHERE id = ?", (blob_id,))
    data = found[0]["data"] if found else None
    return data.encode() if isinstance(data, str) else data


def _root(db: sqlite3.Connection, meta: _Meta) -> tuple[list[str], str | None]:
    """The message blob ids, in order, and the workspace of the latest root blob."""
    root = _blob(db, meta.latestRootBlobId) if meta.latestRootBlobId else None
    ids: list[str] = []
    workspace = None
    try:
        for field, value in protobuf_fields(root or b""):
            if field == _ROOT_MESSAGES and len(value) == 32:
                ids.append(value.hex())
            elif field == _ROOT_WORKSPACE:
                workspace = _path_of(value.decode("utf-8", "replace"))
    except ValueError:
        pass  # a root we cannot parse holds no messages we can find
    return ids, workspace


def _path_of(uri: str) -> str:
    if uri.startswith("file:"):
        return unquote(urlparse(uri).path)
    return uri


def _blob_message(data: bytes, position: int, index: int) -> SourceMessage:
    blob = _decode_blob(data)
    role, docs = documents(blob.role or "", blob.content)
    return SourceMessage(index, position, len(data), role, None, docs)


def _read_store(path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
    result.end_offset = LOCATOR_CHECKPOINT
    with sqlitedb.reading(path) as db:
        meta = _meta(db)
        if _has_transcript(path, meta.agentId or path.parent.name):
            return
        ids, _ = _root(db, meta)
        for position, blob_id in enumerate(ids):
            data = _blob(db, blob_id)
            if data is None:
                continue
            budget.check(path, "record", len(data))
            try:
                message = _blob_message(data, position, result.next_index)
            except (msgspec.DecodeError, RecursionError) as exc:
                result.errors.append(LineError(position, error_class(exc)))
                continue
            result.bytes_read += len(data)
            result.next_index += 1
            yield message


def _load_store(path: Path, position: int, index: int) -> SourceMessage | None:
    with sqlitedb.reading(path) as db:
        ids, _ = _root(db, _meta(db))
        data = _blob(db, ids[position]) if position < len(ids) else None
    if data is None:
        return None
    try:
        return _blob_message(data, position, index)
    except (msgspec.DecodeError, RecursionError):
        return None


def _store_info(path: Path, info: SessionInfo) -> SessionInfo:
    with sqlitedb.reading(path) as db:
        meta = _meta(db)
        _, workspace = _root(db, meta)
    info.session_id = meta.agentId or info.session_id
    info.title = meta.name or info.title
    info.workspace_root = workspace
    created = meta.createdAt
    if isinstance(created, str) and created.isdigit():
        created = int(created)
    if isinstance(created, int | float) and not isinstance(created, bool):
        info.created_at = int(created)
    return info


class CursorFormat(SourceFormat):
    """Reader for Cursor agent transcripts and chat stores; rebuilt on change."""

    name = NAME
    support = Support(
        agent="Cursor agent (CLI)",
        versions="agent transcripts, chat stores of 2025–2026",
        where="`~/.cursor/projects` (`agent-transcripts/`), `~/.cursor/chats`",
        branches="linear",
        subagents="`subagents/` transcripts",
    )
    append_only = False
    resume: str | None = "cursor-agent --resume {id}"
    # Starts the agent with a first prompt (`cursor-agent [prompt]`), for ``resume --in``.
    handoff: str | None = "cursor-agent {prompt}"
    source_names = frozenset({STORE})
    source_dirs = frozenset({TRANSCRIPTS})

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        if path.name == STORE:
            return _read_store(path, result, budget)
        return _read_transcript(path, result, budget)

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        if path.name != STORE:
            return _load_transcript(path, offset, length, index)
        try:
            return _load_store(path, offset, index)
        except (OSError, SourceError):
            return None

    def info(self, path: Path) -> SessionInfo:
        if path.name == STORE:
            info = SessionInfo(session_id=path.parent.name)
            store: Path | None = path
        else:
            info = SessionInfo(session_id=path.name.removesuffix(".jsonl"))
            if path.parent.name == "subagents":
                info.subagent = True
                info.parent_id = path.parent.parent.name or None
                return info
            store = _store_of(path, info.session_id)
        if store is None:
            return info
        try:
            return _store_info(store, info)
        except (OSError, SourceError):
            return info

    def stat(self, path: Path, known: os.stat_result | None = None) -> FileStat:
        return sqlitedb.stat(path) if path.name == STORE else FileStat.of(path)

    def claims(self, path: Path, fixed: bool) -> bool:
        if path.name == STORE:
            return fixed or path.parent.parent.parent.name == "chats"
        return path.name.endswith(".jsonl") and (fixed or TRANSCRIPTS in path.parts)


FORMAT = CursorFormat()
