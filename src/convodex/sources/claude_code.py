"""Claude Code projects (SPEC L1.3): ``~/.claude/projects/<slug>/<session>.jsonl``.

Every line is a record; ``uuid``/``parentUuid`` make a tree. The effective
transcript is the chain from the root to the most recent leaf (the leaf written
last), so turns abandoned by a rewind are not searchable. A ``compact_boundary``
has no ``parentUuid`` but names its predecessor in ``logicalParentUuid``. Records
without a usable parent (old v1.0 logs have ``parentUuid: null`` everywhere, some
parents dangle, a preserved tail is re-written after the boundary naming it)
continue the record written before them. A duplicate ``uuid`` is
ignored (the first one stays). Sidechain records belong to sub-agents: they are
left out of the main transcript; ``subagents/agent-*.jsonl`` files are indexed as
sub-agent sessions of their parent.

One API message streamed as several lines sharing ``message.id`` is one display
message. Its stored span runs from the first to the last of those lines; ``load``
keeps only the lines in the span that carry the same ``message.id`` (tool results
written in between belong to the next message). ``thinking`` is never indexed.
Unknown line types are skipped; only lines that are not JSON objects are errors.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.sources import session_log
from convodex.sources.base import (
    Budget,
    NamedResultsFormat,
    ReadResult,
    SessionInfo,
    SourceMessage,
    messages_at,
)
from convodex.sources.content import Parts, ToolUses, block_text
from convodex.sources.jsonl import decoded_lines, records_at
from convodex.sources.tree import walk_back
from convodex.text.documents import (
    Document,
    tool_call_document,
    tool_result_document,
)

NAME = "claude_code"
MESSAGE_TYPES = frozenset({"user", "assistant"})
LEGACY_TOOL_TYPES = frozenset({"tool_use", "tool_result"})
HEADLESS_ENTRYPOINTS = frozenset({"sdk-cli", "sdk-ts", "sdk-py"})
INFO_SCAN_BYTES = 32 * 1024 * 1024


class _MessageId(msgspec.Struct):
    id: str | None = None


class _Meta(msgspec.Struct):
    """Structure only: message bodies are skipped by the decoder, never copied."""

    type: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    logicalParentUuid: str | None = None
    isSidechain: bool | None = None
    message: _MessageId | str | None = None


class _Message(msgspec.Struct):
    role: str | None = None
    id: str | None = None
    content: Any = None


class _Record(msgspec.Struct):
    type: str | None = None
    uuid: str | None = None
    sessionId: str | None = None
    timestamp: str | None = None
    isMeta: bool | None = None
    isCompactSummary: bool | None = None
    isSidechain: bool | None = None
    message: _Message | str | None = None
    # legacy top-level tool records
    name: str | None = None
    input: Any = None
    output: Any = None
    content: Any = None
    is_error: bool | None = None


class _Info(msgspec.Struct):
    type: str | None = None
    sessionId: str | None = None
    cwd: str | None = None
    entrypoint: str | None = None
    summary: str | None = None
    customTitle: str | None = None
    timestamp: str | None = None


class _SubMeta(msgspec.Struct):
    agentType: str | None = None
    description: str | None = None


_decode_meta = msgspec.json.Decoder(_Meta).decode
_decode_record = msgspec.json.Decoder(_Record).decode
_decode_info = msgspec.json.Decoder(_Info).decode
_decode_submeta = msgspec.json.Decoder(_SubMeta).decode


@dataclass(slots=True)
class _Node:
    parent: str | None
    offset: int
    length: int
    message: bool  # a user or assistant record (a display message)
    role: str | None
    message_id: str | None


def parse_time(value: str | None) -> int | None:
    """Milliseconds since the epoch of an ISO-8601 timestamp, or ``None``."""
    if not value:
        return None
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def effective_spans(
    path: Path,
    result: ReadResult,
    budget: Budget,
    sidechains: list[tuple[int, int]] | None = None,
) -> list[tuple[int, int]]:
    """Pass one: the tree from structural fields, then the spans of the chosen chain.

    Sidechain records in a main file are sub-agent work; their spans (every one, in
    file order: each sub-agent run is its own branch) go to ``sidechains``.
    """
    nodes: dict[str, _Node] = {}
    order: list[str] = []
    sidechain = path.parent.name == "subagents"
    side_nodes: dict[str, _Node] = {}
    side_order: list[str] = []
    for offset, length, _, rec in decoded_lines(path, result, budget, _decode_meta):
        is_message = rec.type in MESSAGE_TYPES or rec.type in LEGACY_TOOL_TYPES
        if rec.uuid is None and not is_message:
            continue  # snapshots, modes, queue operations: not in the tree
        key = rec.uuid if rec.uuid is not None else f"@{offset}"
        bucket, seq = (side_nodes, side_order) if rec.isSidechain else (nodes, order)
        if key not in bucket:  # a duplicate uuid is ignored
            message_id = rec.message.id if isinstance(rec.message, _MessageId) else None
            role = rec.type if rec.type in MESSAGE_TYPES else None
            parent = rec.parentUuid or rec.logicalParentUuid
            bucket[key] = _Node(parent, offset, length, is_message, role, message_id)
            seq.append(key)
    if sidechain or not any(nodes[k].message for k in order):
        return _spans(side_nodes, _leaf_chain(side_nodes, side_order))
    if sidechains is not None:
        sidechains.extend(_spans(side_nodes, side_order))
    return _spans(nodes, _leaf_chain(nodes, order))


def _leaf_chain(nodes: dict[str, _Node], order: list[str]) -> list[str]:
    """The chain from the root to the leaf written last."""
    previous: dict[str, str | None] = {}
    last: str | None = None
    for key in order:
        previous[key] = last
        last = key
    referenced = set()
    for key in order:
        parent = _parent(nodes, previous, key)
        if parent is not None:
            referenced.add(parent)
    leaves = [k for k in order if k not in referenced]
    if not leaves:
        return []
    leaf = max(leaves, key=lambda k: nodes[k].offset)  # the leaf written last
    return walk_back(leaf, lambda key: _parent(nodes, previous, key))


def _spans(nodes: dict[str, _Node], chain: list[str]) -> list[tuple[int, int]]:
    """Display spans of a chain; lines of one streamed API message join one span."""
    spans: list[tuple[int, int]] = []
    group: str | None = None
    for key in chain:
        item = nodes[key]
        if not item.message:
            group = None
            continue
        if item.role == "assistant" and item.message_id is not None and group == item.message_id:
            start, length = spans[-1]
            end = max(start + length, item.offset + item.length)
            start = min(start, item.offset)
            spans[-1] = (start, end - start)
            continue
        group = item.message_id if item.role == "assistant" else None
        spans.append((item.offset, item.length))
    return spans


def _parent(nodes: dict[str, _Node], previous: dict[str, str | None], key: str) -> str | None:
    """A node's parent; without a usable one, the record written before it.

    A parent written after its child is not usable: a compaction that preserved the
    tail re-writes those messages after the boundary that names them.
    """
    parent = nodes[key].parent
    if parent is not None and parent in nodes and nodes[parent].offset < nodes[key].offset:
        return parent
    return previous[key]


def documents(
    records: list[_Record], names: dict[str, str] | None = None
) -> tuple[str, list[Document]]:
    """Role and documents of one display message built from its records.

    ``names`` maps tool_use ids to tool names; calls seen here are added to it.
    """
    first = records[0]
    if first.type == "tool_use":
        return "assistant", [tool_call_document(1, first.name, first.input)]
    if first.type == "tool_result":
        content = first.output if first.output is not None else first.content
        return "tool", [tool_result_document(0, None, block_text(content), bool(first.is_error))]
    parts = Parts(names)
    for rec in records:
        if isinstance(rec.message, _Message):
            parts.blocks(rec.message.content)
    if first.isMeta or first.isCompactSummary:
        return first.type or "", []  # injected context and compaction summaries
    return parts.build(first.type or "")


def _load(
    handle: BinaryIO,
    offset: int,
    length: int,
    index: int,
    names: dict[str, str] | None = None,
) -> SourceMessage | None:
    lines = records_at(handle, offset, length, _decode_record)
    if not lines or (lines[0].type not in MESSAGE_TYPES and lines[0].type not in LEGACY_TOOL_TYPES):
        return None
    first = lines[0]
    message_id = first.message.id if isinstance(first.message, _Message) else None
    # Lines of one streamed API message share its id; others in the span are not it.
    records = [first] + [
        rec
        for rec in lines[1:]
        if rec.type == "assistant"
        and message_id is not None
        and isinstance(rec.message, _Message)
        and rec.message.id == message_id
    ]
    role, docs = documents(records, names)
    message = SourceMessage(index, offset, length, role, parse_time(first.timestamp), docs)
    if not (first.isSidechain or first.sessionId):
        return message
    # Plain string work: a Path per loaded message was a measurable share of a search.
    folder, _, name = str(handle.name).rpartition(os.sep)
    in_subagents = folder.rpartition(os.sep)[2] == "subagents"
    stem = _stem(name)
    if first.isSidechain and not in_subagents:
        # Sub-agent work inside its parent's file: its own (sub-agent) session.
        message.subagent = True
        message.session_id = f"{stem}:sidechain"
        message.title = "sub-agent (sidechain)"
    elif first.sessionId and first.sessionId != stem and not in_subagents:
        # A file holding several sessions (a resumed one carries the earlier
        # session's records): each message reports the session it belongs to. A
        # sub-agent's own file names its parent's session: it is its own session.
        message.session_id = first.sessionId
    return message


def _stem(name: str) -> str:
    """A session file's name without ``.jsonl`` (its session id)."""
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else name.rpartition(".")[0] or name


class _UseLine(msgspec.Struct):
    message: ToolUses | str | None = None


_decode_uses = msgspec.json.Decoder(_UseLine).decode


def _tool_use_names(path: Path) -> dict[str, str]:
    """Tool names by tool_use id: only ids and names are decoded, never inputs or text."""
    names: dict[str, str] = {}
    for _, _, _, line in decoded_lines(path, ReadResult(0, 0), Budget.from_env(), _decode_uses):
        if isinstance(line.message, ToolUses):
            line.message.add_to(names)
    return names


class ClaudeCodeFormat(NamedResultsFormat):
    """Reader for Claude Code project transcripts; rebuilt on change (the leaf can move)."""

    name = NAME
    resume: str | None = "claude --resume {id}"
    # Starts the agent with a first prompt, for ``resume --in``:
    # `claude "query"`: interactive, with a first prompt.
    handoff: str | None = "claude {prompt}"
    append_only = False

    loader = staticmethod(_load)
    call_names = staticmethod(_tool_use_names)

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        sidechains: list[tuple[int, int]] = []
        spans = effective_spans(path, result, budget, sidechains)
        names: dict[str, str] = {}  # filled in order: a call precedes its result
        loader = partial(_load, names=names)
        with open(path, "rb") as handle:
            yield from messages_at(handle, spans, result, loader)
            # Sidechain messages follow the main transcript's display indexes.
            yield from messages_at(handle, sidechains, result, loader)

    def info(self, path: Path) -> SessionInfo:
        stem = _stem(path.name)
        subagent = path.parent.name == "subagents"
        info = SessionInfo(session_id=stem, subagent=subagent)
        first = True
        read = 0
        try:
            with open(path, "rb") as handle:
                for line in handle:
                    read += len(line)
                    if read > INFO_SCAN_BYTES:
                        break
                    if not first and b'"summary"' not in line and b"custom-title" not in line:
                        continue
                    try:
                        rec = _decode_info(line)
                    except (msgspec.DecodeError, RecursionError):
                        continue
                    if first and (rec.cwd or rec.sessionId):
                        first = False
                        info.workspace_root = rec.cwd
                        info.created_at = parse_time(rec.timestamp)
                        if rec.entrypoint in HEADLESS_ENTRYPOINTS:
                            info.subagent = info.headless = True
                    if rec.type == "summary" and rec.summary:
                        info.title = rec.summary
                    elif rec.type == "custom-title" and rec.customTitle:
                        info.title = rec.customTitle
        except OSError:
            pass
        if subagent:
            info.parent_id = path.parent.parent.name or None
            sub = session_log._read_json(path.with_suffix(".meta.json"), _decode_submeta)
            if sub is not None and info.title is None:
                info.title = sub.description or sub.agentType
        return info


FORMAT = ClaudeCodeFormat()
