"""Grok Build (xAI): ``~/.grok/sessions/<percent-encoded cwd>/<session id>/``.

Each session directory holds ``chat_history.jsonl`` (the model's messages, one a
line, no times: ``system``; ``user`` with text and image blocks, injected context
marked by ``synthetic_reason``; ``reasoning`` with an encrypted body; ``assistant``
with ``tool_calls`` ``{id, name, arguments}``; ``tool_result`` naming its call;
``backend_tool_call`` for searches the backend ran) and ``summary.json`` (``info``
id and cwd, titles, times, ``parent_session_id`` for a fork or a child). The
journal ``updates.jsonl`` beside them repeats the same turns with times and can be
gigabytes: it is not read. Sub-agents run in session directories of their own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
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
)
from convodex.sources.claude_info import parse_time
from convodex.sources.content import Parts, block_text
from convodex.sources.jsonl import decoded_lines, line_messages, records_at

NAME = "grok"
HISTORY = "chat_history.jsonl"
SUMMARY = "summary.json"


# Row types known to hold nothing to search; a type neither these nor a message's is
# format drift (``drift``).
SILENT_TYPES = frozenset({"system", "reasoning"})


class _Call(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    arguments: Any = None


class _Row(msgspec.Struct):
    type: str | None = None
    content: Any = None
    synthetic_reason: str | None = None
    tool_calls: list[_Call] | None = None
    tool_call_id: str | None = None
    kind: Any = None  # a backend tool call: {tool_type, action}


class _Calls(msgspec.Struct):
    type: str | None = None
    tool_calls: list[_Call] | None = None


class _Info(msgspec.Struct):
    id: str | None = None
    cwd: str | None = None


class _Summary(msgspec.Struct):
    info: _Info | None = None
    generated_title: str | None = None
    session_summary: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    last_active_at: str | None = None
    parent_session_id: str | None = None


_decode_row = msgspec.json.Decoder(_Row).decode
_decode_calls = msgspec.json.Decoder(_Calls).decode
_decode_summary = msgspec.json.Decoder(_Summary).decode


def _message(
    row: _Row, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage | None:
    parts = Parts(names)
    if row.type == "user":
        if row.synthetic_reason:  # environment, project instructions: context, not typed
            return SourceMessage(index, offset, length, "user", None, [])
        parts.blocks(row.content)
        role = "user"
    elif row.type == "assistant":
        parts.text(row.content if isinstance(row.content, str) else block_text(row.content))
        for call in row.tool_calls or ():
            parts.call(call.id, call.name, call.arguments)
        role = "assistant"
    elif row.type == "tool_result":
        parts.result(row.tool_call_id, None, block_text(row.content))
        role = "tool"
    elif row.type == "backend_tool_call" and isinstance(row.kind, dict):
        action = row.kind.get("action")
        query = action.get("query") if isinstance(action, dict) else None
        parts.call(row.kind.get("id"), row.kind.get("tool_type"), query)
        role = "assistant"
    elif row.type in SILENT_TYPES:
        return None  # the system prompt and reasoning are not messages
    else:
        drift.note(drift.RECORD, row.type)  # a new kind of row: its text is kept
        parts.text(row.content if isinstance(row.content, str) else block_text(row.content))
        role = "assistant"
    role, docs = parts.build(role)
    return SourceMessage(index, offset, length, role, None, docs)


def _load(
    handle: BinaryIO, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage | None:
    rows = records_at(handle, offset, length, _decode_row)
    return _message(rows[0], offset, length, index, names) if rows else None


def _call_names(path: Path) -> dict[str, str]:
    names: dict[str, str] = {}
    for _, _, _, row in decoded_lines(path, ReadResult(0, 0), Budget.from_env(), _decode_calls):
        for call in row.tool_calls or ():
            if call.id and call.name:
                names[call.id] = call.name
    return names


class GrokFormat(NamedResultsFormat):
    """Reader for Grok Build's chat histories, with the session's summary."""

    name = NAME
    support = Support(
        agent="Grok Build",
        versions="CLI 1.0 (chat format 1)",
        where="`~/.grok/sessions/<encoded cwd>/<id>/`, every OS",
        branches="linear (a fork is a session of its own, naming its parent)",
        subagents="sessions of their own",
        gaps="no per-message times (`updates.jsonl` has them and is not read)",
    )
    append_only = False
    resume: str | None = "grok --resume {id}"
    source_names = frozenset({HISTORY})

    loader = staticmethod(_load)
    call_names = staticmethod(_call_names)

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        names: dict[str, str] = {}  # a call comes before its result
        yield from line_messages(path, result, budget, _decode_row, partial(_message, names=names))

    def claims(self, path: Path, fixed: bool) -> bool | None:
        if path.name != HISTORY:
            return False if fixed else None
        return fixed or (path.parent / SUMMARY).is_file() or None

    def info(self, path: Path) -> SessionInfo:
        info = SessionInfo(session_id=path.parent.name)
        try:
            summary = _decode_summary((path.parent / SUMMARY).read_bytes())
        except (OSError, msgspec.DecodeError):
            return info
        if summary.info is not None:
            info.session_id = summary.info.id or info.session_id
            info.workspace_root = summary.info.cwd
        info.title = summary.generated_title or summary.session_summary
        info.created_at = parse_time(summary.created_at)
        info.updated_at = parse_time(summary.last_active_at or summary.updated_at)
        info.parent_id = summary.parent_session_id
        return info


FORMAT = GrokFormat()
