"""Chat exports (SPEC L1.5): ChatGPT and Claude.ai ``conversations.json``, as archives.

One file holds many conversations (a JSON array, ``{"conversations": [...]}``, or
one conversation object); each conversation is its own session: every message
carries its conversation's id and title, and search reports those. Messages keep
their own byte spans (a ChatGPT ``mapping`` node, a Claude.ai ``chat_messages``
element), found by ``jsonspan`` without decoding the rest of the file.

ChatGPT: the transcript is the path from ``current_node`` up to the root; other
branches (regenerated answers, edited prompts) are not searchable. Hidden and
system nodes are skipped; text, code and multimodal text parts are indexed;
thoughts and reasoning recaps are not. A mapping without any parent links is
read in its own order. Claude.ai: the ``parent_message_uuid`` tree, down to the
latest leaf (by ``created_at``, ties to the later one); exports without parent
links are read in order. ``thinking`` blocks are never indexed.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from threading import Lock
from typing import Any

import msgspec

from convodex.sources import drift, jsonspan
from convodex.sources.base import (
    Budget,
    LineError,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
    nested_text,
)
from convodex.sources.claude_info import parse_time
from convodex.text.documents import (
    Document,
    Kind,
    clip_tool_text,
    is_tool_error,
    tool_call_document,
    tool_result_document,
)

NAME = "chat_export"
_TABLE_CACHE = 4


class _Author(msgspec.Struct):
    role: str | None = None
    name: str | None = None


class _NodeMeta(msgspec.Struct):
    is_visually_hidden_from_conversation: bool | None = None


class _LightMessage(msgspec.Struct):
    author: _Author | None = None
    metadata: _NodeMeta | None = None


class _LightNode(msgspec.Struct):
    parent: str | None | msgspec.UnsetType = msgspec.UNSET
    message: _LightMessage | None = None


class _Content(msgspec.Struct):
    content_type: str | None = None
    parts: Any = None
    text: Any = None


class _GptMessage(msgspec.Struct):
    author: _Author | None = None
    content: _Content | None = None
    create_time: float | None = None
    recipient: str | None = None


class _GptNode(msgspec.Struct):
    message: _GptMessage | None = None


class _ClaudeMessage(msgspec.Struct):
    uuid: str | None = None
    parent_message_uuid: str | None = None
    sender: str | None = None
    text: str | None = None
    content: Any = None
    created_at: str | None = None


class _Header(msgspec.Struct):
    id: str | None = None
    conversation_id: str | None = None
    uuid: str | None = None
    title: str | None = None
    name: str | None = None
    current_node: str | None = None
    mapping: dict[str, _LightNode] | None = None
    chat_messages: list[_ClaudeMessage] | None = None

    def key(self) -> str | None:
        return self.conversation_id or self.id or self.uuid

    def label(self) -> str | None:
        return self.title or self.name


class _Ident(msgspec.Struct):
    id: str | None = None
    conversation_id: str | None = None
    uuid: str | None = None
    title: str | None = None
    name: str | None = None


_decode_header = msgspec.json.Decoder(_Header).decode
_decode_ident = msgspec.json.Decoder(_Ident).decode
_decode_gpt = msgspec.json.Decoder(_GptNode).decode
_decode_claude = msgspec.json.Decoder(_ClaudeMessage).decode


def conversations(buf: bytes) -> list[tuple[int, int]]:
    """(start, end) of every conversation object in an export."""
    decoded = _decoded_conversations(buf)
    if decoded is not None:
        return decoded
    start = jsonspan.skip_space(buf, 0)
    if buf[start : start + 1] == b"[":
        return list(jsonspan.elements(buf, start))
    found = jsonspan.member(buf, start, "conversations")
    if found is not None and buf[found[0] : found[0] + 1] == b"[":
        return list(jsonspan.elements(buf, found[0]))
    return [(start, jsonspan.value_end(buf, start))]


def _decoded_conversations(buf: bytes) -> list[tuple[int, int]] | None:
    """``conversations`` from msgspec's decoded spans; None: the scanner decides."""
    whole = jsonspan.decoded_document(buf)
    if whole is None:
        return None
    start, end = whole
    view = memoryview(buf)
    if buf[start : start + 1] == b"[":
        return jsonspan.decoded_elements(buf, start, view[start:end])
    if buf[start : start + 1] != b"{":
        return None
    members = jsonspan.decoded_members(buf, start, view[start:end])
    if members is None:
        return None
    found = next(((s, e) for key, s, e in members if key == "conversations"), None)
    if found is not None and buf[found[0] : found[0] + 1] == b"[":
        return jsonspan.decoded_elements(buf, found[0], view[found[0] : found[1]])
    return [(start, end)]


def _member_spans(buf: bytes, start: int, end: int) -> dict[str, tuple[int, int]] | None:
    """Each member's value span of the object at ``start`` (decoded), or None."""
    members = jsonspan.decoded_members(buf, start, memoryview(buf)[start:end])
    return None if members is None else {key: (s, e) for key, s, e in members}


def _gpt_path(conv: _Header) -> list[str]:
    mapping = conv.mapping or {}
    if not any(node.parent is not msgspec.UNSET for node in mapping.values()):
        return list(mapping)  # no links at all: the mapping's own order
    node = conv.current_node if conv.current_node in mapping else next(reversed(mapping), None)
    path: list[str] = []
    seen: set[str] = set()
    while node is not None and node in mapping and node not in seen:
        seen.add(node)
        path.append(node)
        parent = mapping[node].parent
        node = parent if isinstance(parent, str) else None
    path.reverse()
    return path


def _gpt_shown(node: _LightNode) -> bool:
    msg = node.message
    if msg is None or msg.author is None or msg.author.role == "system":
        return False
    return not (msg.metadata and msg.metadata.is_visually_hidden_from_conversation)


def _claude_path(messages: list[_ClaudeMessage]) -> list[int]:
    if not any(m.parent_message_uuid for m in messages):
        return list(range(len(messages)))
    position = {m.uuid: n for n, m in enumerate(messages) if m.uuid}
    parents = {m.parent_message_uuid for m in messages}
    leaves = [n for n, m in enumerate(messages) if m.uuid not in parents]
    if not leaves:
        return list(range(len(messages)))
    leaf = max(leaves, key=lambda n: (parse_time(messages[n].created_at) or 0, n))
    path: list[int] = []
    seen: set[int] = set()
    at: int | None = leaf
    while at is not None and at not in seen:
        seen.add(at)
        path.append(at)
        parent = messages[at].parent_message_uuid
        at = position.get(parent) if parent else None
    path.reverse()
    return path


def conversation_spans(buf: bytes, start: int, end: int) -> tuple[_Header, list[tuple[int, int]]]:
    """A conversation's header and the absolute spans of its effective messages."""
    conv = _decode_header(buf[start:end])
    members = _member_spans(buf, start, end)  # None: the scanner finds them
    if conv.mapping is not None:
        mapping_span = _value_span(buf, start, members, "mapping")
        nodes: dict[str, tuple[int, int]] = {}
        if mapping_span is not None:
            decoded = _member_spans(buf, *mapping_span)
            nodes = (
                decoded
                if decoded is not None
                else {key: (s, e) for key, s, e in jsonspan.members(buf, mapping_span[0])}
            )
        path = [n for n in _gpt_path(conv) if _gpt_shown(conv.mapping[n]) and n in nodes]
        return conv, [(nodes[n][0], nodes[n][1] - nodes[n][0]) for n in path]
    if conv.chat_messages is not None:
        list_span = _value_span(buf, start, members, "chat_messages")
        elements = _elements(buf, list_span) if list_span is not None else []
        picked = [elements[n] for n in _claude_path(conv.chat_messages) if n < len(elements)]
        return conv, [(s, e - s) for s, e in picked]
    return conv, []


def _value_span(
    buf: bytes, start: int, members: dict[str, tuple[int, int]] | None, key: str
) -> tuple[int, int] | None:
    if members is not None:
        return members.get(key)
    return jsonspan.member(buf, start, key)


def _elements(buf: bytes, span: tuple[int, int]) -> list[tuple[int, int]]:
    """The array's elements: decoded, else scanned."""
    decoded = jsonspan.decoded_elements(buf, span[0], memoryview(buf)[span[0] : span[1]])
    return decoded if decoded is not None else list(jsonspan.elements(buf, span[0]))


_TEXT_KEYS = ("text", "content")
_NO_TEXT_TYPES = frozenset(("thinking", "image", "redacted_thinking"))
# Claude.ai blocks known to hold no words (the remaining-budget notice).
CLAUDE_SILENT_BLOCKS = frozenset({"token_budget"})
# ChatGPT's authors and content types; any other is format drift (``drift``).
GPT_ROLES = frozenset({"user", "assistant", "system", "tool"})
GPT_CONTENT_TYPES = frozenset(
    {"text", "multimodal_text", "code", "execution_output", "thoughts", "reasoning_recap"}
    | {"user_editable_context", "model_editable_context", "tether_browsing_display"}
    | {"tether_quote", "system_error", "sonic_webpage", "computer_output"}
)


def _text(value: Any) -> str:
    return nested_text(value, _TEXT_KEYS, _NO_TEXT_TYPES)


def gpt_documents(node: _GptNode) -> tuple[str, list[Document]]:
    msg = node.message
    if msg is None or msg.author is None or msg.content is None:
        return "", []
    role = msg.author.role or ""
    content = msg.content
    if content.content_type is not None and content.content_type not in GPT_CONTENT_TYPES:
        drift.note(drift.BLOCK, content.content_type)  # its text is kept below
    if role and role not in GPT_ROLES:
        drift.note(drift.RECORD, role)
    if content.content_type in ("thoughts", "reasoning_recap", "user_editable_context"):
        return role, []
    text = _text(content.parts) if content.parts is not None else _text(content.text)
    if role == "tool":
        return role, [tool_result_document(0, msg.author.name, text)] if text else []
    if role == "assistant" and msg.recipient not in (None, "all"):
        return role, [tool_call_document(1, msg.recipient, text)]
    if role in GPT_ROLES - {"user", "assistant"} or not text.strip():
        return role, []
    return role, [Document(0, "user_text" if role == "user" else "assistant_text", text)]


def claude_documents(msg: _ClaudeMessage) -> tuple[str, list[Document]]:
    role = "user" if msg.sender == "human" else (msg.sender or "")
    texts: list[str] = []
    docs: list[Document] = []
    results = 0
    blocks = msg.content if isinstance(msg.content, list) else []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(_text(block.get("text")))
        elif kind == "tool_use":
            name = block.get("name")
            docs.append(tool_call_document(len(docs) + 1, name, block.get("input")))
        elif kind == "tool_result":
            results += 1
            output = _text(block.get("content"))
            flagged = block.get("is_error") is True
            kind_name: Kind = "tool_error" if is_tool_error(output, flagged) else "tool_output"
            docs.append(
                Document(len(docs) + 1, kind_name, clip_tool_text(output), block.get("name"))
            )
        elif kind not in _NO_TEXT_TYPES and kind not in CLAUDE_SILENT_BLOCKS:
            # A block type this reader does not know (Claude.ai adds them): counted
            # (``drift``), and its text kept wherever it is nested, rather than the
            # message indexing nothing.
            drift.note(drift.BLOCK, kind)
            texts.append(_text({key: block[key] for key in block if key != "type"}))
    if not any(texts) and not docs and msg.text:
        texts.append(msg.text)
    text = "\n".join(t for t in texts if t)
    if text.strip() and role in ("user", "assistant"):
        docs.insert(0, Document(0, "user_text" if role == "user" else "assistant_text", text))
    elif role == "user" and results and results == len(docs):
        role = "tool"
    return role, docs


def _message(raw: bytes, offset: int, index: int) -> SourceMessage | None:
    """One mapping node or chat message, told apart by its own keys."""
    try:
        if b'"sender"' in raw:
            claude = _decode_claude(raw)
            if claude.sender is not None:
                role, docs = claude_documents(claude)
                created = parse_time(claude.created_at)
                return SourceMessage(index, offset, len(raw), role, created, docs)
        node = _decode_gpt(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    role, docs = gpt_documents(node)
    stamp = node.message.create_time if node.message else None
    created = int(stamp * 1000) if stamp is not None else None
    return SourceMessage(index, offset, len(raw), role, created, docs)


@dataclass(slots=True)
class _Table:
    """Where each conversation sits in one export, for search-time lookups."""

    stamp: tuple[int, int]
    starts: list[int]
    ends: list[int]
    idents: list[tuple[str | None, str | None]]


class ChatExportFormat(SourceFormat):
    """Reader for chat exports: archive sources, one session per conversation."""

    name = NAME
    support = Support(
        agent="ChatGPT and Claude.ai exports",
        versions="`conversations.json` of 2024–2026",
        where="`$CONVODEX_HOME/exports` or any root",
        branches="ChatGPT `current_node`; Claude.ai latest leaf",
        subagents="—",
    )
    resume: str | None = None
    append_only = False

    def __init__(self) -> None:
        self._tables: dict[str, _Table] = {}
        self._lock = Lock()

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """Under its own root every ``.json`` and ``.jsonl`` file is one."""
        return path.name.endswith((".json", ".jsonl")) if fixed else None

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        with open(path, "rb") as handle:
            buf = handle.read()
        result.end_offset = result.bytes_read = len(buf)
        with jsonspan.indexed(buf):
            yield from self._messages(path, buf, result, budget)

    def _messages(
        self, path: Path, buf: bytes, result: ReadResult, budget: Budget
    ) -> Iterator[SourceMessage]:
        try:
            spans = conversations(buf)
        except (jsonspan.SpanError, IndexError):
            result.errors.append(LineError(0, "MalformedJSON"))
            return
        for start, end in spans:
            budget.check(path, "record", end - start)
            try:
                conv, messages = conversation_spans(buf, start, end)
            except (msgspec.DecodeError, msgspec.ValidationError, jsonspan.SpanError) as exc:
                name = (
                    "InvalidRecord" if isinstance(exc, msgspec.ValidationError) else "MalformedJSON"
                )
                result.errors.append(LineError(start, name))
                continue
            for offset, length in messages:
                message = _message(buf[offset : offset + length], offset, result.next_index)
                if message is None:
                    result.errors.append(LineError(offset, "InvalidRecord"))
                    message = SourceMessage(result.next_index, offset, length, "", None, [])
                message.session_id, message.title = conv.key(), conv.label()
                result.next_index += 1
                yield message

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        with open(path, "rb") as handle:
            handle.seek(offset)
            raw = handle.read(length)
        if len(raw) != length:
            return None
        message = _message(raw, offset, index)
        if message is not None:
            message.session_id, message.title = self._conversation(path, offset)
        return message

    def _conversation(self, path: Path, offset: int) -> tuple[str | None, str | None]:
        """The id and title of the conversation around ``offset`` (a cached table)."""
        st = os.stat(path)
        stamp = (st.st_size, st.st_mtime_ns)
        with self._lock:
            table = self._tables.get(str(path))
        if table is None or table.stamp != stamp:
            with open(path, "rb") as handle:
                buf = handle.read()
            with jsonspan.indexed(buf):
                spans = conversations(buf)
            idents = []
            for start, end in spans:
                ident = _decode_ident(buf[start:end])
                idents.append(
                    (ident.conversation_id or ident.id or ident.uuid, ident.title or ident.name)
                )
            table = _Table(stamp, [s for s, _ in spans], [e for _, e in spans], idents)
            with self._lock:
                if len(self._tables) >= _TABLE_CACHE:
                    self._tables.pop(next(iter(self._tables)))
                self._tables[str(path)] = table
        n = bisect.bisect_right(table.starts, offset) - 1
        if n < 0 or offset >= table.ends[n]:
            return None, None
        return table.idents[n]

    def info(self, path: Path) -> SessionInfo:
        return SessionInfo(session_id=path.name.rsplit(".", 1)[0], archived=True)


FORMAT = ChatExportFormat()
