"""Kiro (AWS): the CLI's session logs and the IDE's workspace sessions.

**CLI** (``kiro-cli``, successor of the Amazon Q Developer CLI):
``~/.kiro/sessions/cli/<uuid>.jsonl`` (``$KIRO_HOME``), one message a line:
``{version: "v1", kind, data: {message_id, content: [{kind, data}], meta?}}`` with
``kind`` ``Prompt`` (typed text; ``meta.timestamp`` in seconds), ``AssistantMessage``
(``text`` and ``toolUse {toolUseId, name, input}``; Kiro's own ``__tool_use_purpose``
argument is left out) and ``ToolResults`` (``toolResult {toolUseId, content: [{kind:
text | json}], status}``, named after its call). The companion ``<uuid>.json`` gives
the session's ``title``, ``cwd``, times and ``session_created_reason``
(``subagent``: a sub-agent's session, kept apart). Append-only, linear.

**IDE**: ``<user dir>/globalStorage/kiro.kiroagent/workspace-sessions/<encoded
workspace>/<id>.json``: ``{sessionId, title, workspacePath, history: [{message:
{role, content, id}}]}``, rewritten in place; each message's span is its element.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.sources import drift, jsonspan
from convodex.sources.base import (
    Budget,
    NamedResultsFormat,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
    load_message,
    messages_at,
    open_source,
    read_at,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.content import Parts, block_text
from convodex.sources.jsonl import line_messages, line_records, records_at
from convodex.text.documents import arguments_text

NAME = "kiro"
IDE = "kiro_ide"
KINDS = frozenset({"Prompt", "AssistantMessage", "ToolResults"})
# A message's content kinds; any other (and any other line kind) is format drift.
CONTENT_KINDS = frozenset({"text", "toolUse", "toolResult", "image"})
SESSIONS_DIR = "workspace-sessions"
_PURPOSE = "__tool_use_purpose"  # why Kiro says it calls a tool: its own, not an argument


class _Data(msgspec.Struct):
    content: Any = None
    meta: Any = None


class _Line(msgspec.Struct):
    kind: str | None = None
    data: _Data | None = None


class _Companion(msgspec.Struct):
    session_id: str | None = None
    cwd: str | None = None
    title: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    session_created_reason: str | None = None


_decode_line = msgspec.json.Decoder(_Line).decode
_decode_companion = msgspec.json.Decoder(_Companion).decode


def _input(value: Any) -> Any:
    if isinstance(value, dict) and _PURPOSE in value:
        return {k: v for k, v in value.items() if k != _PURPOSE}
    return value


def _result_text(content: Any) -> str:
    texts = []
    for item in content if isinstance(content, list) else [content]:
        data = item.get("data") if isinstance(item, dict) else item
        texts.append(data if isinstance(data, str) else block_text(data) or arguments_text(data))
    return "\n".join(t for t in texts if t)


def _build(
    line: _Line, offset: int, length: int, index: int, names: dict[str, str]
) -> SourceMessage | None:
    if line.kind not in KINDS or line.data is None:
        if line.kind is not None and line.kind not in KINDS:
            drift.note(drift.RECORD, line.kind)
        return None
    parts = Parts(names)
    for block in line.data.content if isinstance(line.data.content, list) else ():
        if not isinstance(block, dict):
            continue
        kind, data = block.get("kind"), block.get("data")
        if kind == "text":
            parts.text(data)
        elif kind == "toolUse" and isinstance(data, dict):
            parts.call(data.get("toolUseId"), data.get("name"), _input(data.get("input")))
        elif kind == "toolResult" and isinstance(data, dict):
            failed = data.get("status") not in (None, "success")
            parts.result(data.get("toolUseId"), None, _result_text(data.get("content")), failed)
        elif kind not in CONTENT_KINDS:
            parts.unknown(kind, data)
    role = {"Prompt": "user", "AssistantMessage": "assistant"}.get(line.kind, "tool")
    role, docs = parts.build("user" if role == "tool" else role)
    meta = line.data.meta
    seconds = meta.get("timestamp") if isinstance(meta, dict) else None
    created = int(seconds * 1000) if isinstance(seconds, int | float) else None
    return SourceMessage(index, offset, length, role, created, docs)


def _load(
    handle: BinaryIO, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage | None:
    records = records_at(handle, offset, length, _decode_line)
    if not records:
        return None
    return _build(records[0], offset, length, index, {} if names is None else names)


def _call_names(path: Path) -> dict[str, str]:
    """Tool names by call id (a light pass over the assistant lines)."""
    names: dict[str, str] = {}
    with contextlib.suppress(OSError), open_source(path) as handle:
        for raw in handle:
            if b'"toolUse"' not in raw:
                continue
            for line in line_records(raw, _decode_line):
                _build(line, 0, 0, 0, names)  # its calls fill ``names``
    return names


class KiroCliFormat(NamedResultsFormat):
    """Reader for Kiro CLI session logs: one message a line, appended."""

    name = NAME
    support = Support(
        agent="Kiro CLI (AWS)",
        versions="session logs `v1` (kiro-cli 2.x)",
        where="`~/.kiro/sessions/cli/` (`$KIRO_HOME`), every OS",
        branches="linear (a checkpoint restore rewrites the log)",
        subagents="sessions of their own (`session_created_reason: subagent`), apart",
        gaps="the newer SQLite store (`data.sqlite3`): a payload sample only",
    )
    resume: str | None = "kiro-cli chat --resume-id {id}"
    handoff: str | None = None

    loader = staticmethod(_load)
    call_names = staticmethod(_call_names)

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """Under its root the ``.jsonl`` logs (their ``.json`` companions are not
        sources); elsewhere the first line tells."""
        return path.name.endswith(".jsonl") if fixed else None

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        build = partial(_build, names={})  # filled in order: a call precedes its result
        yield from line_messages(path, result, budget, _decode_line, build)

    def info(self, path: Path) -> SessionInfo:
        stem = path.name.rsplit(".", 1)[0]
        info = SessionInfo(session_id=stem)
        try:
            companion = _decode_companion(path.with_name(f"{stem}.json").read_bytes())
        except (OSError, msgspec.DecodeError, RecursionError):
            return info
        info.session_id = companion.session_id or stem
        info.title = companion.title or None
        info.workspace_root = companion.cwd or None
        info.created_at = parse_time(companion.created_at)
        info.updated_at = parse_time(companion.updated_at)
        info.subagent = companion.session_created_reason == "subagent"
        return info


# -- the IDE ---------------------------------------------------------------------------


class _IdeMessage(msgspec.Struct):
    role: str | None = None
    content: Any = None


class _IdeEntry(msgspec.Struct):
    message: _IdeMessage | None = None


class _IdeSession(msgspec.Struct):
    """The session's facts; its history is skipped unread."""

    sessionId: str | None = None
    title: str | None = None
    workspacePath: str | None = None


_decode_entry = msgspec.json.Decoder(_IdeEntry).decode
_decode_session = msgspec.json.Decoder(_IdeSession).decode


def _load_ide(handle: BinaryIO, offset: int, length: int, index: int) -> SourceMessage | None:
    raw = read_at(handle, offset, length)
    if raw is None:
        return None
    try:
        entry = _decode_entry(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if entry.message is None:
        return None
    parts = Parts()
    parts.blocks(entry.message.content)
    role, docs = parts.build(entry.message.role or "")
    return SourceMessage(index, offset, length, role, None, docs)


class KiroIdeFormat(SourceFormat):
    """Reader for the Kiro IDE's workspace sessions; rebuilt on change."""

    name = IDE
    support = Support(
        agent="Kiro IDE (AWS)",
        versions="workspace sessions",
        where="`<user dir>/globalStorage/kiro.kiroagent/workspace-sessions/` (`<App>` = `Kiro`)",
        branches="the history as saved",
        subagents="—",
        gaps="legacy `.chat` executions and IDE v2 `~/.kiro/sessions/<hash>/sess_<id>/`: "
        "no sample; no per-message times",
    )
    append_only = False
    source_dirs = frozenset({SESSIONS_DIR})

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """A session's ``.json`` in a ``workspace-sessions/<workspace>/`` folder."""
        inside = path.name.endswith(".json") and path.parent.parent.name == SESSIONS_DIR
        return inside if fixed else (inside or None)

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        spans = jsonspan.array_spans(path, result, budget, ("history",))
        with open_source(path) as handle:
            yield from messages_at(handle, spans, result, _load_ide)

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        return load_message(path, offset, length, index, _load_ide)

    def info(self, path: Path) -> SessionInfo:
        info = SessionInfo(session_id=path.stem)
        try:
            session = _decode_session(path.read_bytes())
        except (OSError, msgspec.DecodeError, RecursionError):
            return info
        info.session_id = session.sessionId or path.stem
        info.title = session.title or None
        info.workspace_root = session.workspacePath or None
        return info


FORMATS: dict[str, SourceFormat] = {NAME: KiroCliFormat(), IDE: KiroIdeFormat()}
