"""Factory Droid: session-store logs and ``droid exec`` stream-json logs.

Session store (``~/.factory/sessions/<cwd slug>/<id>.jsonl``): a ``session_start``
line (``id``, ``title``, ``cwd``), then ``message`` lines ``{id, parentId,
timestamp, message: {role, content}}`` with Anthropic-style content (tool results
are ``tool_result`` blocks in user messages). The ``parentId`` links form a tree;
the effective branch is the chain from the message written last (a message
without ``parentId`` continues the one before it). Stream-json
(``droid exec --output-format stream-json``, saved wherever it was redirected):
one event a line, ``system`` / ``message`` / ``tool_call`` / ``tool_result`` /
``completion`` / ``error``, keyed by ``session_id``; each message, call, result
and final text is a display message. Those runs have no person at the keyboard:
they are labelled headless. Leading ``<system-reminder>`` blocks Droid adds to a
prompt are not user text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.sources import drift
from convodex.sources.base import (
    Budget,
    NamedResultsFormat,
    ReadResult,
    SessionInfo,
    SourceMessage,
    Support,
    messages_at,
    open_source,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.content import Parts, ToolUses, block_text
from convodex.sources.jsonl import decoded_lines, line_messages, line_records, records_at
from convodex.sources.tree import chain_to

NAME = "droid"
STREAM_TYPES = frozenset({"system", "message", "tool_call", "tool_result", "completion", "error"})
# Records known to hold nothing to search (an empty completion too); any other type is
# format drift (``drift``).
SILENT_TYPES = frozenset({"session_start", "system", "error", "completion", "todo_state"})
# Where ``droid exec --output-format stream-json`` output is often redirected: such a
# file is a source only when its first record is a stream-json event.
STREAM_LOG_SUFFIXES = (".ndjson", ".log")
# One bounded read decides: any log may be big and binary.
STREAM_SNIFF_BYTES = 64 * 1024
_REMINDERS = re.compile(r"^(?:\s*<system-reminder>.*?</system-reminder>)+\s*", re.S | re.I)


class _Message(msgspec.Struct):
    role: str | None = None
    content: Any = None


class _Record(msgspec.Struct):
    """Both dialects: a store ``message`` line, or one stream-json event."""

    type: str | None = None
    id: str | None = None
    timestamp: str | int | float | None = None
    message: _Message | str | None = None
    role: str | None = None
    text: str | None = None
    content: Any = None
    toolCallId: str | None = None
    toolName: str | None = None
    parameters: Any = None
    input: Any = None
    value: Any = None
    isError: bool | None = None
    finalText: str | None = None


class _Meta(msgspec.Struct):
    """Structure only (store dialect); message content is skipped."""

    type: str | None = None
    id: str | None = None
    parentId: str | None | msgspec.UnsetType = msgspec.UNSET
    message: msgspec.Raw = msgspec.Raw()


class _Head(msgspec.Struct):
    type: str | None = None
    id: str | None = None
    title: str | None = None
    sessionTitle: str | None = None
    cwd: str | None = None
    session_id: str | None = None
    sessionId: str | None = None
    timestamp: str | int | float | None = None
    message: msgspec.Raw = msgspec.Raw()


class _CallLine(msgspec.Struct):
    type: str | None = None
    id: str | None = None
    toolCallId: str | None = None
    toolName: str | None = None
    message: ToolUses | str | None = None


_decode_record = msgspec.json.Decoder(_Record).decode
_decode_meta = msgspec.json.Decoder(_Meta).decode
_decode_head = msgspec.json.Decoder(_Head).decode
_decode_calls = msgspec.json.Decoder(_CallLine).decode


def is_store(head: _Head) -> bool:
    """Session-store dialect: a ``session_start`` or a ``message`` holding a message."""
    return head.type == "session_start" or (head.type == "message" and len(head.message) > 0)


def is_stream(head: _Head) -> bool:
    return head.type in STREAM_TYPES and bool(head.session_id or head.sessionId)


def opens_stream(head: bytes) -> bool:
    """Whether a file's first bytes open a stream-json log: its first line is an event
    keyed by session (a file of another suffix, ``run.log``, is claimed only then)."""
    first = head.lstrip().split(b"\n", 1)[0]
    try:
        return is_stream(_decode_head(first))
    except (msgspec.DecodeError, RecursionError):  # a ValidationError too
        return False


def _stamp(value: str | int | float | None) -> int | None:
    """ISO text, or epoch seconds / milliseconds."""
    if isinstance(value, str):
        return parse_time(value)
    if isinstance(value, int | float):
        return int(value * 1000) if value < 1e11 else int(value)
    return None


def _prompt(text: str) -> str:
    return _REMINDERS.sub("", text, count=1)


def _message(
    rec: _Record, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage | None:
    parts = Parts(names)
    if isinstance(rec.message, _Message):  # session store
        role = rec.message.role or ""
        content = rec.message.content
        if role == "user" and isinstance(content, list):
            content = [_unremind(part) for part in content]
        elif role == "user" and isinstance(content, str):
            content = _prompt(content)
        parts.blocks(content)
    elif rec.type == "message":
        role = rec.role or ""
        text = rec.text or (rec.content if isinstance(rec.content, str) else None)
        text = text or (rec.message if isinstance(rec.message, str) else None) or ""
        parts.text(_prompt(text) if role == "user" else text)
    elif rec.type == "tool_call":
        role = "assistant"
        args = rec.parameters if rec.parameters is not None else rec.input
        parts.call(rec.toolCallId or rec.id, rec.toolName, args)
    elif rec.type == "tool_result":
        role = "tool"
        failed = rec.isError is True or _exit_code(rec.value) not in (None, 0)
        parts.result(rec.toolCallId or rec.id, rec.toolName, block_text(rec.value), failed)
    elif rec.type == "completion" and rec.finalText:
        role = "assistant"
        parts.text(rec.finalText)
    elif rec.type in SILENT_TYPES or rec.type is None:
        return None  # session_start, system, error: not messages
    else:
        drift.note(drift.RECORD, rec.type)  # a new kind of event: its text is kept
        role = "assistant"
        parts.text(rec.text or (rec.content if isinstance(rec.content, str) else None))
    role, docs = parts.build(role)
    return SourceMessage(index, offset, length, role, _stamp(rec.timestamp), docs)


def _unremind(part: Any) -> Any:
    if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
        return {**part, "text": _prompt(part["text"])}
    return part


def _exit_code(value: Any) -> Any:
    return value.get("exitCode", value.get("exit_code")) if isinstance(value, dict) else None


def _load(
    handle: BinaryIO, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage | None:
    records = records_at(handle, offset, length, _decode_record)
    return _message(records[0], offset, length, index, names) if records else None


@dataclass(slots=True)
class _Node:
    parent: str | None
    offset: int
    length: int


def _store_spans(path: Path, result: ReadResult, budget: Budget) -> list[tuple[int, int]]:
    """The chain of messages from the one written last back to the root."""
    nodes: dict[str, _Node] = {}
    leaf: str | None = None
    for offset, length, _, meta in decoded_lines(path, result, budget, _decode_meta):
        if meta.type != "message" or not len(meta.message):
            continue
        key = meta.id or f"@{offset}"
        parent = leaf if meta.parentId is msgspec.UNSET else meta.parentId
        nodes.setdefault(key, _Node(parent, offset, length))
        leaf = key
    return [(nodes[k].offset, nodes[k].length) for k in chain_to(nodes, leaf)]


def _head(path: Path) -> _Head | None:
    try:
        with open(path, "rb") as handle:
            for line in handle:
                if line.strip():
                    return next(iter(line_records(line, _decode_head)), None)
    except OSError:
        return None
    return None


def _call_names(path: Path) -> dict[str, str]:
    """Tool names by call id: only ids and names are decoded."""
    names: dict[str, str] = {}
    result, budget = ReadResult(0, 0), Budget.from_env()
    for _, _, _, line in decoded_lines(path, result, budget, _decode_calls):
        if line.type == "tool_call" and line.toolName and (line.toolCallId or line.id):
            names[line.toolCallId or line.id or ""] = line.toolName
        if isinstance(line.message, ToolUses):
            line.message.add_to(names)
    return names


class DroidFormat(NamedResultsFormat):
    """Reader for Factory Droid logs of both dialects; rebuilt on change."""

    name = NAME
    support = Support(
        agent="Factory Droid",
        versions="session store, `droid exec` stream-json",
        where="`~/.factory/sessions/<cwd slug>/`; stream-json logs by content",
        branches="linear",
        subagents="`droid exec` runs headless",
    )
    append_only = False
    resume: str | None = "droid --resume {id}"
    # Starts the agent with a first prompt, for ``resume --in``:
    # `droid "query"`: REPL with an initial prompt.
    handoff: str | None = "droid {prompt}"

    loader = staticmethod(_load)
    call_names = staticmethod(_call_names)

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """Under a droid root, a ``.log``/``.ndjson`` file is a source when it opens a
        stream-json log (as anywhere else, ``discover``); ``.jsonl`` as usual."""
        if not fixed or not path.name.endswith(STREAM_LOG_SUFFIXES):
            return None
        try:
            with open_source(path) as handle:
                return opens_stream(handle.read(STREAM_SNIFF_BYTES))
        except OSError:
            return False

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        names: dict[str, str] = {}  # calls come before their results
        head = _head(path)
        if head is not None and is_store(head):
            spans = _store_spans(path, result, budget)
            with open(path, "rb") as handle:
                yield from messages_at(handle, spans, result, partial(_load, names=names))
            return
        build = partial(_message, names=names)
        yield from line_messages(path, result, budget, _decode_record, build)

    def info(self, path: Path) -> SessionInfo:
        stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
        info = SessionInfo(session_id=stem)
        head = _head(path)
        if head is None:
            return info
        if head.type == "session_start":
            info.session_id = head.id or stem
            info.title = head.sessionTitle or head.title
            info.workspace_root = head.cwd
        elif is_stream(head):
            info.session_id = head.session_id or head.sessionId or stem
            info.workspace_root = head.cwd
            info.created_at = _stamp(head.timestamp)
            info.subagent = info.headless = True  # `droid exec`: no person in the loop
        return info


FORMAT = DroidFormat()
