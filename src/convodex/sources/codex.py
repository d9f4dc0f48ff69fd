"""Codex CLI rollouts (SPEC L1.4): ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``.

The transcript is the ``response_item`` records: ``message`` (``input_text`` /
``output_text``), ``function_call`` / ``custom_tool_call`` and their outputs.
``event_msg`` user and agent messages repeat those items for the UI and are used
only by rollouts that have no message items at all (older and event-only logs).
Injected ``<environment_context>`` / ``<user_instructions>`` blocks are context,
not user text. ``thread_rolled_back`` removes the last ``num_turns`` user turns
from the effective transcript, which is why appends rebuild this format.
Pre-envelope rollouts (bare items after a bare header) read the same way.

A display message is one user message, one tool output, or one assistant turn:
an assistant message with the tool calls that follow it. The stored span of a
turn runs from its first to its last record; ``load`` skips reasoning and event
records inside it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.sources import drift, session_log
from convodex.sources.base import (
    Budget,
    NamedResultsFormat,
    ReadResult,
    SessionInfo,
    SourceMessage,
    Support,
    messages_at,
    nested_text,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.jsonl import decoded_lines, line_records
from convodex.text.documents import (
    Document,
    arguments_text,
    tool_call_document,
    tool_result_document,
)

NAME = "codex"
# ``tool_call``/``tool_result``: the generic shape other tools write into rollouts.
CALL_TYPES = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_call"}
)
OUTPUT_TYPES = frozenset(
    {"function_call_output", "custom_tool_call_output", "function_result", "tool_result"}
)
# What else is known, so anything new is counted as format drift (``drift``): line
# types, response items that hold no message, and the content parts of a message.
LINE_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted", "message"}
    | {"reasoning", "world_state", "inter_agent_communication_metadata", "retained_context"}
    | {"realtime_item"}
    | CALL_TYPES
    | OUTPUT_TYPES
)
SILENT_ITEMS = frozenset(
    {"reasoning", "tool_search_call", "tool_search_output", "image_generation_call"}
    | {"ghost_snapshot", "compaction", "agent_message"}
)
CONTENT_TYPES = frozenset(
    {"input_text", "output_text", "text", "input_image", "input_file", "refusal", "summary_text"}
    | {"code"}
)
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
)
_EXIT = re.compile(r"^(?:Process exited with code|Exit code:)\s*(-?\d+)", re.M)
_JSON_EXIT = re.compile(r'"exit_code"\s*:\s*(-?\d+)')


class _PayloadMeta(msgspec.Struct):
    type: str | None = None
    role: str | None = None
    num_turns: int | None = None
    call_id: str | None = None
    name: str | None = None


class _LineMeta(msgspec.Struct):
    """Structure only; message content is skipped by the decoder."""

    type: str | None = None
    role: str | None = None
    payload: _PayloadMeta | None = None
    call_id: str | None = None  # pre-envelope calls
    name: str | None = None


class _Item(msgspec.Struct):
    type: str | None = None
    role: str | None = None
    content: Any = None
    name: str | None = None
    call_id: str | None = None
    arguments: Any = None
    input: Any = None
    action: Any = None
    output: Any = None
    result: Any = None
    message: Any = None
    function: Any = None
    timestamp: str | None = None
    created_at: str | None = None


class _Line(msgspec.Struct):
    type: str | None = None
    timestamp: str | None = None
    payload: _Item | None = None
    # pre-envelope items carry their fields at the top level
    role: str | None = None
    content: Any = None
    name: str | None = None
    call_id: str | None = None
    arguments: Any = None
    output: Any = None
    result: Any = None
    message: Any = None
    function: Any = None
    created_at: str | None = None


class _SessionMeta(msgspec.Struct):
    id: str | None = None
    cwd: str | None = None
    timestamp: str | None = None
    source: Any = None
    originator: str | None = None
    forked_from_id: str | None = None


class _MetaLine(msgspec.Struct):
    type: str | None = None
    payload: _SessionMeta | None = None
    id: str | None = None
    timestamp: str | None = None


_decode_meta = msgspec.json.Decoder(_LineMeta).decode
_decode_line = msgspec.json.Decoder(_Line).decode
_decode_session = msgspec.json.Decoder(_MetaLine).decode


def _item(line: _Line) -> tuple[str, _Item] | None:
    """(envelope type, item) of a line: enveloped or pre-envelope."""
    if line.payload is not None and line.type in ("response_item", "event_msg"):
        return line.type, line.payload
    if line.type in ("message", *CALL_TYPES, *OUTPUT_TYPES) or (line.type is None and line.role):
        item = _Item(
            type=line.type or "message",
            role=line.role,
            content=line.content if line.content is not None else line.message,
            name=line.name,
            call_id=line.call_id,
            arguments=line.arguments,
            output=line.output,
            result=line.result,
            function=line.function,
        )
        return "response_item", item
    return None


_TEXT_KEYS = ("text", "code", "output", "content")
_NO_TEXT_TYPES = frozenset(("reasoning", "summary_text", "input_image"))


def _text(value: Any) -> str:
    return nested_text(value, _TEXT_KEYS, _NO_TEXT_TYPES)


def _noted(content: Any) -> Any:
    """A message's content, its parts of unknown types counted (their text is kept)."""
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and part.get("type") not in CONTENT_TYPES:
            drift.note(drift.BLOCK, part.get("type"))
    return content


def _user_text(content: Any) -> str:
    """User text without injected context blocks."""
    parts = content if isinstance(content, list) else [content]
    texts = []
    for part in parts:
        text = _text(part)
        if text and not text.lstrip().startswith(INJECTED_PREFIXES):
            texts.append(text)
    return "\n".join(texts)


def _failed(text: str) -> bool:
    """A shell output header (before ``Output:``) or JSON metadata with a nonzero exit."""
    header = text.split("\nOutput:", 1)[0][:2048]
    match = _EXIT.search(header) or (_JSON_EXIT.search(header) if header[:1] == "{" else None)
    return match is not None and match.group(1) != "0"


def _kind(envelope: str, item: _Item) -> str | None:
    """What a record contributes: user, assistant, call, output, or nothing."""
    if envelope == "event_msg":
        if item.type == "user_message":
            return "event_user"
        if item.type == "agent_message":
            return "event_assistant"
        return None
    if item.type == "message" or item.type is None:
        # A payload with a role and no type is a message too (the Responses API's
        # ``EasyInputMessage``, which other tools write into rollouts).
        return item.role if item.role in ("user", "assistant") else None
    if item.type in CALL_TYPES:
        return "call"
    if item.type in OUTPUT_TYPES:
        return "output"
    return None


def effective_spans(
    path: Path, result: ReadResult, budget: Budget, names: dict[str, str] | None = None
) -> list[tuple[int, int]]:
    """Pass one: display spans after rollbacks; bodies are decoded only for user items.

    ``names`` collects each call id's tool name: output records do not carry it.
    """
    items: list[tuple[str, int, int]] = []  # (role, offset, end)
    events: list[tuple[str, int, int]] = []
    rollbacks: list[tuple[int, int]] = []  # (position in items, turns)
    has_messages = False
    for offset, length, body, meta in decoded_lines(path, result, budget, _decode_meta):
        end = offset + length
        payload = meta.payload
        if meta.type == "event_msg" and payload is not None:
            if payload.type == "thread_rolled_back":
                rollbacks.append((len(items), payload.num_turns or 1))
            elif payload.type == "user_message":
                events.append(("user", offset, end))
            elif payload.type == "agent_message":
                events.append(("assistant", offset, end))
            continue
        kind = None
        if meta.type is not None and meta.type not in LINE_TYPES:
            drift.note(drift.RECORD, meta.type)
        if meta.type == "response_item" and payload is not None:
            kind = _kind("response_item", _Item(type=payload.type, role=payload.role))
            silent = payload.type in SILENT_ITEMS or payload.type in (None, "message")
            if kind is None and not silent:
                drift.note(drift.RECORD, f"response_item.{payload.type}")
        elif meta.type in ("message", *CALL_TYPES, *OUTPUT_TYPES) or (
            meta.type is None and meta.role
        ):
            kind = _kind("response_item", _Item(type=meta.type or "message", role=meta.role))
        if kind == "user" and not _is_user_turn(body):
            kind = "context"
        if kind == "call" and names is not None:
            call = payload if payload is not None else meta
            if call.call_id and call.name:
                names[call.call_id] = call.name
        has_messages = has_messages or kind in ("user", "assistant", "context")
        if kind == "call" and items and items[-1][0] == "assistant":
            items[-1] = ("assistant", items[-1][1], end)  # the turn's calls join it
        elif kind == "call":
            items.append(("assistant", offset, end))
        elif kind is not None:
            items.append(("tool" if kind == "output" else kind, offset, end))
    if not has_messages and events:
        items = sorted(events + items, key=lambda i: i[1])
        rollbacks = []  # event-only logs: positions refer to no item list
    for position, turns in reversed(rollbacks):
        _roll_back(items, position, turns)
    return [(start, end - start) for _, start, end in items]


def _roll_back(items: list[tuple[str, int, int]], position: int, turns: int) -> None:
    """Drop the last ``turns`` user turns that existed at ``position``."""
    starts = [n for n in range(min(position, len(items))) if items[n][0] == "user"]
    if not starts:
        return
    cut = starts[-turns] if turns <= len(starts) else starts[0]
    del items[cut:position]


def _is_user_turn(body: bytes) -> bool:
    try:
        line = _decode_line(body)
    except (msgspec.DecodeError, RecursionError):
        return False
    pair = _item(line)
    return pair is not None and bool(_user_text(pair[1].content).strip())


def _load(
    handle: BinaryIO,
    offset: int,
    length: int,
    index: int,
    names: dict[str, str] | None = None,
) -> SourceMessage | None:
    handle.seek(offset)
    raw = handle.read(length)
    if len(raw) != length:
        return None
    role: str | None = None
    created: int | None = None
    texts: list[str] = []
    docs: list[Document] = []
    # A span's records, glued ones split (a turn's calls join its message's span).
    lines = (rec for body in raw.splitlines() for rec in line_records(body, _decode_line))
    for line in lines:
        pair = _item(line)
        if pair is None:
            continue
        envelope, item = pair
        kind = _kind(envelope, item)
        if kind is None or (role is not None and envelope == "event_msg"):
            continue
        if role is None:
            created = parse_time(line.timestamp or line.created_at or item.timestamp)
        if kind in ("event_user", "event_assistant"):
            role = "user" if kind == "event_user" else "assistant"
            texts.append(_text(item.message))
            break
        if kind == "user":
            role = "user"
            texts.append(_user_text(_noted(item.content)))
            break
        if kind == "output":
            content = item.output if item.output is not None else item.result
            text = _text(content)
            if not text and isinstance(content, dict):
                text = arguments_text(content)  # a structured result ({stdout, exitCode})
            name = item.name or (names or {}).get(item.call_id or "")
            docs.append(tool_result_document(0, name, text, _failed(text)))
            role = "tool"
            break
        if kind == "assistant":
            if role == "assistant" and (texts or docs):
                break  # the next assistant message starts the next turn
            role = "assistant"
            texts.append(_text(_noted(item.content)))
        elif kind == "call":
            role = "assistant"
            name = item.name
            if name is None and isinstance(item.function, dict):
                name = item.function.get("name")
            args = item.arguments if item.arguments is not None else item.input
            if args is None:
                args = item.action
            docs.append(tool_call_document(len(docs) + 1, name, args))
    if role is None:
        return None
    text = "\n".join(t for t in texts if t)
    if text.strip():
        docs.insert(0, Document(0, "user_text" if role == "user" else "assistant_text", text))
    return SourceMessage(index, offset, length, role, created, docs)


def _call_names(path: Path) -> dict[str, str]:
    """Tool names by call id, from a structure-only pass over the rollout."""
    names: dict[str, str] = {}
    effective_spans(path, ReadResult(0, 0), Budget.from_env(), names)
    return names


class CodexFormat(NamedResultsFormat):
    """Reader for Codex CLI rollouts; rebuilt on change (a rollback rewrites the end)."""

    name = NAME
    support = Support(
        agent="Codex CLI",
        versions="0.50–0.53, rollouts of 2025–2026",
        where="`~/.codex/sessions`, `~/.codex/archived_sessions` (`$CODEX_HOME`), every OS",
        branches="rollbacks remove their turns",
        subagents="child rollouts (`source.subagent`), `codex exec` runs headless",
    )
    resume: str | None = "codex resume {id}"
    # Starts the agent with a first prompt, for ``resume --in``:
    # `codex [PROMPT]` opens the TUI with it.
    handoff: str | None = "codex {prompt}"
    append_only = False

    loader = staticmethod(_load)
    call_names = staticmethod(_call_names)

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        names: dict[str, str] = {}
        spans = effective_spans(path, result, budget, names)
        with open(path, "rb") as handle:
            yield from messages_at(handle, spans, result, partial(_load, names=names))

    def info(self, path: Path) -> SessionInfo:
        archived = any(p in session_log.ARCHIVE_DIR_NAMES for p in path.parts[-6:-1])
        stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
        match = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", stem)
        info = SessionInfo(session_id=match.group(0) if match else stem, archived=archived)
        try:
            with open(path, "rb") as handle:
                first = handle.readline(1024 * 1024)
        except OSError:
            return info
        line = next(iter(line_records(first, _decode_session)), None)
        if line is None:
            return info
        meta = line.payload if line.type == "session_meta" else None
        if meta is None:
            if line.id:
                info.session_id = line.id
            return info
        info.session_id = meta.id or info.session_id
        info.workspace_root = meta.cwd
        info.created_at = parse_time(meta.timestamp)
        info.parent_id = meta.forked_from_id
        source = meta.source
        if isinstance(source, dict) and "subagent" in source:
            info.subagent = True
            spawn = source["subagent"]
            spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
            if isinstance(spawn, dict):
                info.parent_id = spawn.get("parent_thread_id") or info.parent_id
                info.title = spawn.get("agent_nickname") or spawn.get("agent_role")
        elif source == "exec" or meta.originator == "codex_exec":
            info.subagent = info.headless = True
        return info


FORMAT = CodexFormat()
