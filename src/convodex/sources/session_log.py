"""The native session log (SPEC L1.1): ``<id>.jsonl``, one provider message per line.

Sidecars: ``<id>.jsonl.meta`` (title, workspace, revision …); sub-agent
transcripts ``subagents/<ref>.jsonl`` with ``<ref>.meta.json`` naming the parent.
Malformed lines are counted per source and skipped; they never stop a read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.sources import drift
from convodex.sources.base import (
    Budget,
    LineError,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
    open_source,
)
from convodex.sources.jsonl import error_class, glued, tolerant
from convodex.text.documents import (
    Document,
    tool_call_document,
    tool_result_document,
)

NAME = "session_log"

# Companion logs that sit beside transcripts but are not transcripts.
EXCLUDED_SUFFIXES = (".events.jsonl", ".turns.jsonl", ".conflicts.jsonl", ".guardian.jsonl")
ARCHIVE_DIR_NAMES = frozenset({"archive", "archived", "archived_sessions"})
_SKIPPED_ROLES = frozenset({"system", "developer"})
# Any other role, and any content part of a type not listed, is format drift (``drift``):
# counted, and its text kept as the agent's.
ROLES = _SKIPPED_ROLES | {"user", "assistant", "tool"}
PART_TYPES = frozenset(
    {"text", "thinking", "reasoning", "image", "image_url", "input_audio", "file", "refusal"}
)
_META_ORIGINS = frozenset({"pinned", "context", "system", "injected"})
_SKIP_CHUNK = 1024 * 1024
_LINE_PROBE = 64 * 1024
# Records up to this size are decoded whole at once: preflight (SPEC L6) pays off for
# large payloads; for a small one, decoding it twice costs more than the copy it saves.
_WHOLE_RECORD_BYTES = 64 * 1024


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: Any = None


class _ToolCall(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    function: _Function | None = None


class _Record(msgspec.Struct):
    """Only the fields search needs; anything else in a line is ignored."""

    role: str | None = None
    content: Any = None
    tool_calls: list[_ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    createdAt: int | float | None = None
    meta: bool | None = None
    isMeta: bool | None = None
    origin: str | None = None
    is_error: bool | None = None


class _Head(msgspec.Struct):
    """Preflight (SPEC L6): what decides a record's role and kind, never its payload.

    ``content`` and ``tool_calls`` are not fields here, so msgspec skips over them
    while scanning: a 64 MiB string costs no decoded copy until the record is known
    to be a message that yields documents.
    """

    role: str | None = None
    tool_call_id: str | None = None
    createdAt: int | float | None = None
    meta: bool | None = None
    isMeta: bool | None = None
    origin: str | None = None


class _Meta(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    custom_title: str | None = None
    parent_id: str | None = None
    workspace_root: str | None = None
    revision: int | None = None
    created_at: int | float | None = None
    updated_at: int | float | None = None


class _SubagentMeta(msgspec.Struct):
    ref: str | None = None
    parentSession: str | None = None
    parent_id: str | None = None
    name: str | None = None


# Lone surrogate escapes read as U+FFFD rather than costing the record (``tolerant``).
_decode_record = tolerant(msgspec.json.Decoder(_Record).decode)
_decode_head = tolerant(msgspec.json.Decoder(_Head).decode)
_decode_meta = msgspec.json.Decoder(_Meta).decode
_decode_submeta = msgspec.json.Decoder(_SubagentMeta).decode


class RecordError(Exception):
    """A line that is valid JSON but not a message; named by class, never by content."""


def is_transcript_name(name: str) -> bool:
    return name.endswith(".jsonl") and not name.endswith(EXCLUDED_SUFFIXES)


def content_text(content: Any) -> str:
    """Text of a string content, or the ``text`` of every part that has one, joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                if part.get("type") not in PART_TYPES:
                    drift.note(drift.BLOCK, part.get("type"))
                text = part.get("text")
                if isinstance(text, str) and part.get("type") not in ("thinking", "reasoning"):
                    texts.append(text)
        return "\n".join(texts)
    if isinstance(content, dict):
        text = content.get("text")
        return text if isinstance(text, str) else ""
    return ""


def documents_of(record: _Record, tool_names: dict[str, str]) -> list[Document] | None:
    """Documents of one record, or ``None`` for system and meta messages."""
    role = record.role
    if role is None:
        raise RecordError("record has no role")
    if role in _SKIPPED_ROLES or record.meta or record.isMeta or record.origin in _META_ORIGINS:
        return None
    docs: list[Document] = []
    if role == "tool":
        name = record.name or (tool_names.get(record.tool_call_id or "") or None)
        docs.append(
            tool_result_document(0, name, content_text(record.content), bool(record.is_error))
        )
        return docs
    if role not in ROLES:
        drift.note(drift.RECORD, role)
        text = content_text(record.content)
        return [_text_document("assistant", text)] if text.strip() else []
    text = content_text(record.content)
    if text.strip():
        docs.append(_text_document(role, text))
    for n, call in enumerate(record.tool_calls or (), start=1):
        name = call.name or (call.function.name if call.function else None)
        args = (
            call.arguments
            if call.arguments is not None
            else (call.function.arguments if call.function else None)
        )
        if call.id and name:
            tool_names[call.id] = name
        docs.append(tool_call_document(n, name, args))
    return docs


def preflight(line: bytes | memoryview) -> tuple[_Head, bool]:
    """(head, shown) of one encoded record, decoding no copy of its payload strings.

    ``shown`` is False for system and meta records, which display but yield no
    documents, so their bodies are never decoded at all.
    """
    head = _decode_head(line)
    if head.role is None:
        raise RecordError("record has no role")
    hidden = (
        head.role in _SKIPPED_ROLES
        or bool(head.meta)
        or bool(head.isMeta)
        or head.origin in _META_ORIGINS
    )
    return head, not hidden


def head_and_documents(
    line: bytes, tool_names: dict[str, str]
) -> tuple[_Head | _Record, list[Document] | None]:
    """The record's head (role, time) and its documents (``None`` for system and meta).

    A small record is decoded once, whole. A large one is preflighted first, so a
    system or meta record's payload is never decoded; so is a small one that does not
    decode whole, which then fails (or passes) exactly as preflight decides.
    """
    if len(line) <= _WHOLE_RECORD_BYTES:
        try:
            record = _decode_record(line)
        except (msgspec.DecodeError, RecursionError):
            pass
        else:
            return record, documents_of(record, tool_names)
    head, shown = preflight(line)
    return head, documents_of(_decode_record(line), tool_names) if shown else None


def _next_line(handle: BinaryIO, offset: int, path: Path, budget: Budget) -> bytes:
    """The line at ``offset`` (terminator included) in one allocation; ``b""`` at the end.

    A short line is read as is. A long one is first measured in chunks that are not
    kept, checked against the record budget, then read in one piece: a buffered
    ``readline`` of a long line would hold its chunks and their join, twice its size.
    """
    line = handle.readline(_LINE_PROBE)
    if line.endswith(b"\n") or len(line) < _LINE_PROBE:
        budget.check(path, "record", len(line))
        return line
    length = len(line) + _skip_rest_of_line(handle)
    budget.check(path, "record", length)
    del line
    handle.seek(offset)
    return handle.read(length)


def _skip_rest_of_line(handle: BinaryIO) -> int:
    """Bytes up to and including the next newline, read in chunks and not kept."""
    skipped = 0
    while True:
        chunk = handle.readline(_SKIP_CHUNK)
        skipped += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return skipped


def _text_document(role: str, text: str) -> Document:
    return Document(0, "user_text" if role == "user" else "assistant_text", text)


def _created_at(value: int | float | None) -> int | None:
    return int(value) if value is not None else None


def _glued(
    line: bytes, tool_names: dict[str, str]
) -> list[tuple[int, bytes, Any, list[Document] | None]]:
    """The records of a line holding several (``jsonl.glued``), each with its place;
    none when any of them is not a usable record."""
    body = line.strip()
    lead = line.find(body)
    try:
        return [
            (lead + start, body[start:end], record, documents_of(record, tool_names))
            for start, end, record in glued(body, _decode_record) or []
        ]
    except RecordError:
        return []


class SessionLogFormat(SourceFormat):
    """Reader for the native session log."""

    name = NAME
    support = Support(
        agent="convodex session log",
        versions="1",
        where="`$CONVODEX_HOME/sessions`",
        branches="append-only: every record",
        subagents="`subagents/<ref>.jsonl` with a `.meta.json` naming the parent",
    )
    resume: str | None = None

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        """Messages from the checkpoint on, under the log and record budgets (SPEC L6).

        A record's encoded size is its line as stored, line terminator included; a
        line over the record budget is measured in chunks, never held whole, and a
        line within it is held once.
        """
        size = os.stat(path).st_size
        budget.check(path, "log", size)
        tool_names: dict[str, str] = {}
        with open_source(path) as handle:
            handle.seek(result.end_offset)
            offset = result.end_offset
            while True:
                line = _next_line(handle, offset, path, budget)
                if not line:
                    break
                length = len(line)
                complete = line.endswith(b"\n")
                if line.isspace():
                    offset += length
                    result.end_offset = offset
                    result.bytes_read += length
                    continue
                try:
                    head, docs = head_and_documents(line, tool_names)
                except (msgspec.DecodeError, RecordError, RecursionError) as exc:
                    pieces = _glued(line, tool_names)
                    if pieces:  # records written without a newline between them
                        for at, piece, head, docs in pieces:
                            yield SourceMessage(
                                result.next_index,
                                offset + at,
                                len(piece),
                                head.role or "",
                                _created_at(head.createdAt),
                                docs or [],
                            )
                            result.next_index += 1
                        offset += length
                        result.end_offset = offset
                        result.bytes_read += length
                        continue
                    if not complete:
                        break  # a half-written last line: wait for the writer to finish it
                    result.errors.append(LineError(offset, error_class(exc)))
                    offset += length
                    result.end_offset = offset
                    result.bytes_read += length
                    continue
                del line
                message = SourceMessage(
                    result.next_index,
                    offset,
                    length,
                    head.role or "",
                    _created_at(head.createdAt),
                    docs or [],
                )
                offset += length
                result.end_offset = offset
                result.bytes_read += length
                result.next_index += 1
                yield message

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        with open_source(path) as handle:
            handle.seek(offset)
            raw = handle.read(length)
        if len(raw) != length:
            return None
        try:
            record = _decode_record(raw.strip())
            docs = documents_of(record, {})
        except (msgspec.DecodeError, RecordError, RecursionError):
            return None
        return SourceMessage(
            index, offset, length, record.role or "", _created_at(record.createdAt), docs or []
        )

    def info(self, path: Path) -> SessionInfo:
        archived = any(part in ARCHIVE_DIR_NAMES for part in path.parent.parts[-2:])
        if path.parent.name == "subagents":
            ref = path.name[: -len(".jsonl")]
            sub = _read_json(path.with_name(f"{ref}.meta.json"), _decode_submeta)
            parent = None
            if sub is not None:
                parent = sub.parentSession or sub.parent_id
            return SessionInfo(
                session_id=ref,
                title=sub.name if sub else None,
                parent_id=parent or path.parent.parent.name or None,
                subagent=True,
                archived=archived,
            )
        meta = _read_json(path.with_name(path.name + ".meta"), _decode_meta)
        session_id = path.name[: -len(".jsonl")]
        if meta is None:
            return SessionInfo(session_id=session_id, archived=archived)
        return SessionInfo(
            session_id=meta.id or session_id,
            title=meta.custom_title or meta.name,
            workspace_root=meta.workspace_root,
            parent_id=meta.parent_id,
            archived=archived,
            created_at=_created_at(meta.created_at),
            updated_at=_created_at(meta.updated_at),
        )


def _read_json(path: Path, decode: Any) -> Any:
    """A sidecar, or ``None`` when it is missing or unreadable (sidecars are optional)."""
    try:
        with open(path, "rb") as handle:
            return decode(handle.read(1024 * 1024))
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


FORMAT = SessionLogFormat()
