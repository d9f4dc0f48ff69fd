"""Gemini CLI chats: ``~/.gemini/tmp/<project hash>/chats/session-*.json`` or ``.jsonl``.

The JSON form is one document whose ``messages`` (older: ``history``) array holds
the transcript; each element's byte span is found without decoding the rest (see
``jsonspan``). The JSONL form is a header line, then one record a line: messages
(``id``, ``type`` user/gemini/…), ``{"$set": {...}}`` metadata updates and
``{"$rewindTo": "<id>"}``, which removes that message and everything after it. A
message written again under an id already seen replaces it in place. Because a
rewind rewrites the end, appends rebuild this format.

A Gemini message holds its tool calls and their results: the text is part 0, call
``i`` is part ``2i+1`` (``tool_input``) and its result part ``2i+2``. Thoughts are
never indexed; ``info``/``error``/``warning`` entries are not documents.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.sources import drift, jsonspan
from convodex.sources.base import (
    Budget,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
    load_message,
    messages_at,
    read_at,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.jsonl import decoded_lines, line_records
from convodex.text.documents import (
    Document,
    Kind,
    clip_tool_text,
    is_tool_error,
    tool_call_document,
)

NAME = "gemini"
INFO_READ_BYTES = 4 * 1024 * 1024


class _Call(msgspec.Struct):
    name: str | None = None
    args: Any = None
    result: Any = None
    status: str | None = None
    resultDisplay: Any = None


class _Message(msgspec.Struct):
    id: str | None = None
    type: str | None = None
    role: str | None = None
    content: Any = None
    parts: Any = None
    toolCalls: list[_Call] | None = None
    timestamp: str | None = None
    ts: int | float | None = None


class _Ident(msgspec.Struct):
    id: str | None = None
    type: str | None = None


class _Set(msgspec.Struct):
    messages: list[_Ident] | None = None


class _LineMeta(msgspec.Struct):
    id: str | None = None
    type: str | None = None
    rewind_to: str | None = msgspec.field(default=None, name="$rewindTo")
    set: _Set | None = msgspec.field(default=None, name="$set")


class _Header(msgspec.Struct):
    sessionId: str | None = None
    summary: str | None = None
    startTime: str | None = None
    start_time: str | None = None
    kind: str | None = None


_decode_message = msgspec.json.Decoder(_Message).decode
_decode_line_meta = msgspec.json.Decoder(_LineMeta).decode
_decode_header = msgspec.json.Decoder(_Header).decode
MESSAGE_TYPES = frozenset({"user", "gemini", "model", "assistant", "info", "error", "warning"})
# The keys of the content parts known (a part is named by its key, not a type): a part
# with none of them is counted as format drift (``drift``) and keeps its text.
PART_KEYS = frozenset(
    {"text", "thought", "functionCall", "functionResponse", "output", "error", "content"}
    | {"inlineData", "fileData", "executableCode", "codeExecutionResult", "thoughtSignature"}
)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (_text(v) for v in value) if t)
    if isinstance(value, dict):
        if value.get("thought") is True:
            return ""
        if "text" in value:
            return _text(value["text"])
        response = value.get("functionResponse")
        if isinstance(response, dict):
            return _text(response.get("response"))
        for key in ("output", "error", "content"):
            if key in value:
                return _text(value[key])
    return ""


def documents(msg: _Message) -> tuple[str, list[Document]]:
    kind = msg.type or msg.role or ""
    if kind not in ("user", "gemini", "model", "assistant"):
        if kind and kind not in MESSAGE_TYPES:
            drift.note(drift.RECORD, kind)
        return kind, []
    role = "user" if kind == "user" else "assistant"
    docs: list[Document] = []
    content = msg.content if msg.content is not None else msg.parts
    texts: list[str] = []
    parts = content if isinstance(content, list) else [content]
    calls: list[tuple[str | None, Any, Any, bool]] = []
    for part in parts:
        if isinstance(part, dict) and isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            calls.append((call.get("name"), call.get("args"), None, False))
        elif isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            response = part["functionResponse"]
            calls.append((response.get("name"), None, response.get("response"), False))
        elif isinstance(part, dict) and part and PART_KEYS.isdisjoint(part):
            name = next(iter(part))
            drift.note(drift.BLOCK, name)
            texts.append(_text(part[name]))
        else:
            texts.append(_text(part))
    for call in msg.toolCalls or ():
        calls.append((call.name, call.args, call.result, call.status == "error"))
    text = "\n".join(t for t in texts if t)
    if text.strip():
        docs.append(Document(0, "user_text" if role == "user" else "assistant_text", text))
    for i, (name, args, result, failed) in enumerate(calls):
        if args is not None:
            docs.append(tool_call_document(2 * i + 1, name, args))
        if result is not None:
            output = _text(result)
            kind_name: Kind = "tool_error" if is_tool_error(output, failed) else "tool_output"
            docs.append(Document(2 * i + 2, kind_name, clip_tool_text(output), name))
    return role, docs


def _load(handle: BinaryIO, offset: int, length: int, index: int) -> SourceMessage | None:
    raw = read_at(handle, offset, length)
    if raw is None:
        return None
    try:
        msg = _decode_message(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    role, docs = documents(msg)
    created = parse_time(msg.timestamp)
    if created is None and msg.ts is not None:
        created = int(msg.ts * 1000) if msg.ts < 1e11 else int(msg.ts)
    return SourceMessage(index, offset, length, role, created, docs)


def _jsonl_spans(path: Path, result: ReadResult, budget: Budget) -> list[tuple[int, int]]:
    order: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    for offset, length, body, rec in decoded_lines(path, result, budget, _decode_line_meta):
        if rec.set is not None and rec.set.messages is not None:
            # A snapshot of the whole transcript (Gemini CLI's loader reads it first):
            # its messages replace what came before, each at its place in the line.
            order, spans = [], {}
            for n, (start, end) in enumerate(_snapshot_spans(body)):
                meta = rec.set.messages[n] if n < len(rec.set.messages) else _Ident()
                if meta.type in MESSAGE_TYPES:
                    key = meta.id if meta.id is not None else f"@{offset + start}"
                    if key not in spans:
                        order.append(key)
                    spans[key] = (offset + start, end - start)
        elif rec.rewind_to is not None and rec.rewind_to in spans:
            cut = order.index(rec.rewind_to)
            for gone in order[cut:]:
                del spans[gone]
            del order[cut:]
        elif rec.type is not None and rec.type not in MESSAGE_TYPES:
            drift.note(drift.RECORD, rec.type)
        elif rec.type in MESSAGE_TYPES:
            key = rec.id if rec.id is not None else f"@{offset}"
            if key not in spans:
                order.append(key)
            spans[key] = (offset, length)  # a re-written id: in place
    return [spans[k] for k in order]


def _snapshot_spans(line: bytes) -> list[tuple[int, int]]:
    """(start, end) in ``line`` of each element of its ``$set.messages`` array."""
    try:
        start = jsonspan.skip_space(line, 0)
        found = jsonspan.member(line, start, "$set")
        inner = jsonspan.member(line, found[0], "messages") if found else None
        return list(jsonspan.elements(line, inner[0])) if inner else []
    except (jsonspan.SpanError, IndexError):
        return []


class GeminiFormat(SourceFormat):
    """Reader for Gemini CLI chats (JSON and JSONL); rebuilt on change."""

    name = NAME
    support = Support(
        agent="Gemini CLI",
        versions="JSON chats, JSONL 0.40",
        where="`~/.gemini/tmp/<hash>/chats/`, every OS",
        branches="`$rewindTo` cuts, `$set.messages` snapshots replace",
        subagents="—",
    )
    append_only = False
    resume: str | None = "gemini --resume {id}"
    # Starts the agent with a first prompt (`-i`: run it, stay interactive), for ``resume --in``.
    handoff: str | None = "gemini --prompt-interactive {prompt}"

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """Under its own root every ``.json`` and ``.jsonl`` file is one."""
        return path.name.endswith((".json", ".jsonl")) if fixed else None

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        if path.name.endswith(".jsonl"):
            spans = _jsonl_spans(path, result, budget)
        else:
            spans = jsonspan.array_spans(path, result, budget, ("messages", "history"))
        with open(path, "rb") as handle:
            yield from messages_at(handle, spans, result, _load)

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        return load_message(path, offset, length, index, _load)

    def info(self, path: Path) -> SessionInfo:
        stem = path.name.rsplit(".", 1)[0]
        info = SessionInfo(session_id=stem)
        try:
            with open(path, "rb") as handle:
                if path.name.endswith(".jsonl"):
                    head = handle.readline(1024 * 1024)
                elif os.fstat(handle.fileno()).st_size <= INFO_READ_BYTES:
                    head = handle.read()
                else:
                    return info
        except OSError:
            return info
        header = next(iter(line_records(head, _decode_header)), None)
        if header is None:
            return info
        info.session_id = header.sessionId or stem
        info.title = header.summary
        info.created_at = parse_time(header.startTime or header.start_time)
        info.subagent = header.kind == "subagent"
        return info


FORMAT = GeminiFormat()
