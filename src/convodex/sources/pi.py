"""Pi coding agent sessions: ``~/.pi/agent/sessions/<encoded cwd>/<time>_<id>.jsonl``.

Version 3: a ``session`` header (``id``, ``cwd``, ``timestamp``, ``parentSession``
for a fork), then entries with ``id`` / ``parentId`` forming a tree in the one
file: ``message`` (``user``, ``assistant``, ``toolResult``, ``bashExecution``…),
``model_change``, ``thinking_level_change``, ``compaction``, ``branch_summary``,
``session_info`` (a name), ``label``, ``custom``. Branching adds children to an
earlier entry, and Pi continues from the entry written last: the effective branch
is the chain from that entry back to the root. A ``compaction`` only summarises for
the model; the entries it summarised stay on the branch and stay searchable, while
its summary (like a branch summary) is not a message. Older files without ids read
in order.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.sources import drift
from convodex.sources.base import (
    Budget,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
    load_message,
    messages_at,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.content import Parts, block_text
from convodex.sources.jsonl import decoded_lines, line_records, records_at
from convodex.sources.tree import chain_to

NAME = "pi"
HEADER = "session"
# Entry types known to hold no message of their own: any other is counted (``drift``).
META_TYPES = frozenset(
    {
        HEADER,
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "session_info",
        "label",
        "custom",
        "custom_message",
    }
)


class _Meta(msgspec.Struct):
    """Structure only; message bodies are skipped by the decoder."""

    type: str | None = None
    id: str | None = None
    parentId: str | None = None


class _Message(msgspec.Struct):
    role: str | None = None
    content: Any = None
    timestamp: int | float | None = None
    toolCallId: str | None = None
    toolName: str | None = None
    isError: bool | None = None
    command: str | None = None
    output: str | None = None
    exitCode: int | None = None


class _Entry(msgspec.Struct):
    type: str | None = None
    timestamp: str | None = None
    message: _Message | None = None


class _Info(msgspec.Struct):
    type: str | None = None
    id: str | None = None
    parentId: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    parentSession: str | None = None
    name: str | None = None


class _Call(msgspec.Struct):
    type: str | None = None
    id: str | None = None


class _CallMessage(msgspec.Struct):
    content: list[_Call] | str | None = None


class _Calls(msgspec.Struct):
    """An entry's tool-call ids: OpenClaw's tool results name the call as parent."""

    message: _CallMessage | None = None


_decode_meta = msgspec.json.Decoder(_Meta).decode
_decode_calls = msgspec.json.Decoder(_Calls).decode
_decode_entry = msgspec.json.Decoder(_Entry).decode
_decode_info = msgspec.json.Decoder(_Info).decode


@dataclass(slots=True)
class _Node:
    parent: str | None
    offset: int
    length: int
    message: bool


def _chain(path: Path, result: ReadResult, budget: Budget) -> list[_Node]:
    """Pass one: the entries on the effective branch, root first."""
    nodes: dict[str, _Node] = {}
    linear: list[_Node] = []
    leaf: str | None = None
    calls: dict[str, str] = {}  # tool-call id -> the entry that made the call
    for offset, length, body, meta in decoded_lines(path, result, budget, _decode_meta):
        if meta.type == HEADER:
            continue
        if meta.type is not None and meta.type != "message" and meta.type not in META_TYPES:
            drift.note(drift.RECORD, meta.type)
        node = _Node(meta.parentId, offset, length, meta.type == "message")
        if meta.id is None:
            linear.append(node)  # before v3 entries had no ids: the file order
            continue
        nodes.setdefault(meta.id, node)
        leaf = meta.id
        if b'"toolCall"' in body:
            calls.update((call_id, meta.id) for call_id in _call_ids(body))
    for node in nodes.values():
        if node.parent is not None and node.parent not in nodes:
            node.parent = calls.get(node.parent, node.parent)  # a parent named by its call
    return linear + [nodes[key] for key in chain_to(nodes, leaf)]


def _call_ids(body: bytes) -> list[str]:
    try:
        content = _decode_calls(body).message
    except (msgspec.DecodeError, RecursionError):
        return []
    blocks = content.content if content is not None else None
    if not isinstance(blocks, list):
        return []
    return [b.id for b in blocks if b.type == "toolCall" and b.id]


def _message(entry: _Entry, offset: int, length: int, index: int) -> SourceMessage | None:
    msg = entry.message
    if entry.type != "message" or msg is None:
        return None
    parts = Parts()
    role = msg.role or ""
    if role in ("user", "assistant"):
        parts.blocks(msg.content)
    elif role == "toolResult":
        parts.result(msg.toolCallId, msg.toolName, block_text(msg.content), msg.isError is True)
        role = "tool"
    elif role == "bashExecution":  # the person ran `!command` in Pi
        parts.call(None, "bash", msg.command)
        failed = msg.exitCode not in (None, 0)
        parts.result(None, "bash", msg.output or "", failed)
        role = "user"
    # custom, branchSummary and compactionSummary messages are context, not documents
    role, docs = parts.build(role)
    created = parse_time(entry.timestamp)
    if created is None and msg.timestamp is not None:
        created = int(msg.timestamp)
    return SourceMessage(index, offset, length, role, created, docs)


def _load(handle: BinaryIO, offset: int, length: int, index: int) -> SourceMessage | None:
    entries = records_at(handle, offset, length, _decode_entry)
    return _message(entries[0], offset, length, index) if entries else None


class PiFormat(SourceFormat):
    """Reader for Pi sessions; rebuilt on change (a new branch moves the leaf)."""

    name = NAME
    support = Support(
        agent="Pi",
        versions="sessions before v3, v3",
        where="`~/.pi/agent/sessions/<cwd>/` (`$PI_CODING_AGENT_DIR`)",
        branches="the chain to the entry written last",
        subagents="—",
    )
    append_only = False
    resume: str | None = "pi --session {id}"
    # Starts the agent with a first prompt (`pi [messages...]`), for ``resume --in``.
    handoff: str | None = "pi {prompt}"

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        spans = [(n.offset, n.length) for n in _chain(path, result, budget) if n.message]
        with open(path, "rb") as handle:
            yield from messages_at(handle, spans, result, _load)

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        return load_message(path, offset, length, index, _load)

    def info(self, path: Path) -> SessionInfo:
        stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
        info = SessionInfo(session_id=stem.rsplit("_", 1)[-1])
        try:
            with open(path, "rb") as handle:
                head = handle.readline(1024 * 1024)
        except OSError:
            return info
        header = next(iter(line_records(head, _decode_info)), None)
        if header is not None and header.type == HEADER:
            info.session_id = header.id or info.session_id
            info.workspace_root = header.cwd
            info.created_at = parse_time(header.timestamp)
            if header.parentSession:  # a fork names the file it was forked from
                parent = Path(header.parentSession).name.removesuffix(".jsonl")
                info.parent_id = parent.rsplit("_", 1)[-1]
        info.title = _name(path)
        return info


def _name(path: Path) -> str | None:
    """The last ``session_info`` name on the effective branch."""
    try:
        chain = _chain(path, ReadResult(0, 0), Budget.from_env())
    except OSError:
        return None
    name = None
    with open(path, "rb") as handle:
        for node in chain:
            handle.seek(node.offset)
            line = handle.read(node.length)
            if b'"session_info"' not in line:
                continue
            try:
                entry = _decode_info(line)
            except msgspec.DecodeError:
                continue
            if entry.type == "session_info" and entry.name:
                name = entry.name
    return name


FORMAT = PiFormat()
