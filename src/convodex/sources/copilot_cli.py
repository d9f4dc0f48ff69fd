"""GitHub Copilot CLI event logs: ``~/.copilot/session-state/<id>/events.jsonl``.

Older releases wrote ``~/.copilot/session-state/<id>.jsonl``; both are one event a
line, ``{type, data, id, timestamp, parentId}`` with ``parentId`` a linear chain.
Display messages are ``user.message`` (user text), ``assistant.message`` (its text
and one ``tool_input`` per ``toolRequests`` entry) and ``tool.execution_complete``
(``tool_output``, or ``tool_error`` when ``success`` is false), named after the
request or ``tool.execution_start`` with the same ``toolCallId``. Reasoning,
hooks, session bookkeeping and injected system messages are not documents; a
``session.truncation`` only trims what the model sees, so nothing is removed.
Events a sub-agent emitted (``data.parentToolCallId``) are its own sub-agent
session, indexed after the main transcript.
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
    messages_at,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.content import Parts, block_text
from convodex.sources.jsonl import decoded_lines, line_messages, line_records, records_at

NAME = "copilot_cli"
EVENTS_FILE = "events.jsonl"
MESSAGE_TYPES = frozenset({"user.message", "assistant.message", "tool.execution_complete"})
# Every other event type the CLI writes (its SDK's session-events schema and real logs):
# any type not here is format drift (``drift``), and one of the user's or the
# assistant's with a ``content`` string keeps that text.
EVENT_TYPES = (
    MESSAGE_TYPES
    | {
        f"session.{name}"
        for name in (
            "start resume error idle title_changed info warning model_change mode_changed "
            "plan_changed workspace_file_changed handoff truncation snapshot_rewind shutdown "
            "compaction_start compaction_complete usage_info usage_checkpoint auto_mode_resolved "
            "context_changed"
        ).split()
    }
    | {
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.intent",
        "assistant.reasoning",
        "assistant.reasoning_delta",
        "assistant.thinking",
        "assistant.message_delta",
        "assistant.usage",
        "tool.execution_start",
        "tool.execution_partial_result",
        "tool.execution_progress",
        "tool.user_requested",
        "skill.invoked",
        "subagent.started",
        "subagent.completed",
        "subagent.failed",
        "subagent.selected",
        "hook.start",
        "hook.end",
        "system.message",
        "system.notification",
        "abort",
    }
)


class _Request(msgspec.Struct):
    toolCallId: str | None = None
    name: str | None = None
    arguments: Any = None


class _Data(msgspec.Struct):
    content: Any = None
    toolRequests: list[_Request] | None = None
    toolCallId: str | None = None
    toolName: str | None = None
    success: bool | None = None
    result: Any = None
    error: Any = None
    parentToolCallId: str | None = None


class _Event(msgspec.Struct):
    type: str | None = None
    timestamp: str | None = None
    data: _Data | None = None


class _Context(msgspec.Struct):
    cwd: str | None = None


class _StartData(msgspec.Struct):
    sessionId: str | None = None
    startTime: str | None = None
    context: _Context | None = None
    infoType: str | None = None
    message: str | None = None


class _Start(msgspec.Struct):
    type: str | None = None
    timestamp: str | None = None
    data: _StartData | None = None


class _NamesData(msgspec.Struct):
    toolCallId: str | None = None
    toolName: str | None = None
    toolRequests: list[_Request] | None = None


class _NamesEvent(msgspec.Struct):
    type: str | None = None
    data: _NamesData | None = None


_decode_event = msgspec.json.Decoder(_Event).decode
_decode_start = msgspec.json.Decoder(_Start).decode
_decode_names = msgspec.json.Decoder(_NamesEvent).decode


def _message(
    event: _Event, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage | None:
    data = event.data
    kind = event.type
    if kind is not None and kind not in EVENT_TYPES:
        drift.note(drift.RECORD, kind)
        family = kind.partition(".")[0]
        if family in ("user", "assistant") and data and isinstance(data.content, str):
            kind = f"{family}.message"  # a new kind of message: its words are kept
    if data is None or kind not in MESSAGE_TYPES:
        if kind == "tool.execution_start" and data and data.toolCallId and data.toolName:
            if names is not None:
                names.setdefault(data.toolCallId, data.toolName)
        return None
    parts = Parts(names)
    if kind == "user.message":
        role = "user"
        parts.text(data.content)
    elif kind == "assistant.message":
        role = "assistant"
        parts.text(data.content)
        for request in data.toolRequests or ():
            parts.call(request.toolCallId, request.name, request.arguments)
    else:
        role = "tool"
        text = block_text(data.result) or block_text(data.error)
        parts.result(data.toolCallId, data.toolName, text, data.success is False)
    role, docs = parts.build(role)
    message = SourceMessage(index, offset, length, role, parse_time(event.timestamp), docs)
    message.subagent = data.parentToolCallId is not None
    return message


def _load(
    handle: BinaryIO, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage | None:
    events = records_at(handle, offset, length, _decode_event)
    return _message(events[0], offset, length, index, names) if events else None


def _call_names(path: Path) -> dict[str, str]:
    """Tool names by call id, from requests and execution starts (nothing else decoded)."""
    names: dict[str, str] = {}
    result, budget = ReadResult(0, 0), Budget.from_env()
    for _, _, _, event in decoded_lines(path, result, budget, _decode_names):
        data = event.data
        if data is None:
            continue
        for request in data.toolRequests or ():
            if request.toolCallId and request.name:
                names[request.toolCallId] = request.name
        if event.type == "tool.execution_start" and data.toolCallId and data.toolName:
            names.setdefault(data.toolCallId, data.toolName)
    return names


def session_id_of(path: Path) -> str:
    """``<id>/events.jsonl`` is named by its folder, a legacy log by its file."""
    if path.name == EVENTS_FILE:
        return path.parent.name
    return path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem


def _workspace_title(path: Path) -> str | None:
    """``name`` (set by ``/rename``) or else ``summary`` from ``workspace.yaml`` beside the log.

    Only plain one-line values are read: enough for a title, no YAML parser needed.
    """
    if path.name != EVENTS_FILE:
        return None
    try:
        lines = (path.parent / "workspace.yaml").read_text("utf-8").splitlines()
    except (OSError, UnicodeError):
        return None
    found: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition(":")
        value = value.strip().strip("'\"")
        if sep and key in ("name", "summary") and value and value[0] not in "|>":
            found[key] = value
    return found.get("name") or found.get("summary")


class CopilotCliFormat(NamedResultsFormat):
    """Reader for Copilot CLI event logs; rebuilt on change (sub-agent work follows)."""

    name = NAME
    support = Support(
        agent="GitHub Copilot CLI",
        versions="0.0.3xx, 1.0.x",
        where="`~/.copilot/session-state/<id>/events.jsonl`, legacy `<id>.jsonl`",
        branches="linear (truncations drop turns)",
        subagents="`subagent.*` events kept in the parent",
    )
    append_only = False
    resume: str | None = "copilot --resume={id}"
    # Starts the agent with a first prompt (`-i PROMPT`), for ``resume --in``.
    handoff: str | None = "copilot --interactive {prompt}"

    loader = staticmethod(_load)
    call_names = staticmethod(_call_names)

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        # Every call's name first, as ``load`` sees them: a result logged before its
        # call (redacted or reordered logs) is named the same at index and search time.
        names = _call_names(path)
        side: list[tuple[int, int]] = []

        def build(event: _Event, offset: int, length: int, index: int) -> SourceMessage | None:
            if event.data is not None and event.data.parentToolCallId is not None:
                if event.type in MESSAGE_TYPES:
                    side.append((offset, length))
                    return None
            return _message(event, offset, length, index, names)

        yield from line_messages(path, result, budget, _decode_event, build)
        with open(path, "rb") as handle:
            yield from messages_at(handle, side, result, partial(_load, names=names))

    def info(self, path: Path) -> SessionInfo:
        info = SessionInfo(session_id=session_id_of(path), title=_workspace_title(path))
        try:
            with open(path, "rb") as handle:
                for number, line in enumerate(handle):
                    if number > 32 or info.workspace_root is not None:
                        break
                    if b"session.start" not in line and b"folder_trust" not in line:
                        continue
                    for event in line_records(line, _decode_start):
                        data = event.data
                        if data is None:
                            continue
                        if event.type == "session.start":
                            info.session_id = data.sessionId or info.session_id
                            info.created_at = parse_time(data.startTime or event.timestamp)
                            info.workspace_root = data.context.cwd if data.context else None
                        elif data.infoType == "folder_trust" and data.message:
                            info.workspace_root = _trusted_folder(data.message)
        except OSError:
            pass
        return info


def _trusted_folder(message: str) -> str | None:
    """``Folder /path has been added to trusted folders.``: older logs' only cwd."""
    head, sep, rest = message.partition("Folder ")
    folder, found, _ = rest.partition(" has been")
    return folder.strip() or None if sep and found else None


FORMAT = CopilotCliFormat()
