"""Kimi Code (Moonshot) sessions: ``~/.kimi-code/sessions/wd_<dir>_<hash>/session_<id>/``.

``$KIMI_CODE_HOME/sessions``; the macOS desktop app embeds the same runtime under
``~/Library/Application Support/kimi-desktop/…/kimi-code/home/sessions``. A session
directory holds ``state.json`` (``title``, ``workDir``, ``createdAt``, ``agents``:
``main`` and sub-agents ``agent-N`` with ``parentAgentId``) and one
``agents/<agent id>/wire.jsonl`` per agent: an event log (protocol 1.4) of
``{type, time, …}`` lines. What a person reads is ``context.append_message`` (a
prompt; ``origin.kind: injection`` marks reminders Kimi adds, not typed text) and the
loop events of each model step: ``content.part`` (``text``; ``think`` is never
indexed), ``tool.call`` (``toolCallId``, ``name``, ``args``) and ``tool.result``
(``result.output``, ``result.isError``). A step's text and calls are one assistant
message, the results after them one tool message (``sources.events``). The main
agent's session id is the directory name, the one ``kimi -r`` takes; a sub-agent's
is ``<session>:<agent>``, kept apart and resumed as its session.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.sources import drift, events
from convodex.sources.base import (
    Budget,
    NamedResultsFormat,
    ReadResult,
    SessionInfo,
    SourceMessage,
    Support,
    open_source,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.content import Parts, block_text
from convodex.sources.jsonl import line_records
from convodex.text.documents import arguments_text

NAME = "kimi"
WIRE = "wire.jsonl"
STATE = "state.json"
MAIN = "main"
# The wire's record types and loop event types (protocol 1.4, real wires): any other
# is format drift (``drift``); so is a content part neither ``text`` nor ``think``.
RECORD_TYPES = frozenset(
    {"metadata", "config.update", "turn.prompt", "context.append_message"}
    | {"context.append_loop_event", "context.apply_compaction", "llm.request"}
    | {"llm.tools_snapshot", "usage.record", "permission.record_approval_result"}
    | {"tools.set_active_tools", "plan_mode.enter", "plan_mode.exit"}
    | {"full_compaction.begin", "full_compaction.complete"}
)
LOOP_TYPES = frozenset(
    {"content.part", "step.begin", "step.end", "tool.call", "tool.result", "llm.request"}
)


class _Event(msgspec.Struct):
    type: str | None = None
    time: int | float | None = None
    message: Any = None
    event: Any = None


class _Agent(msgspec.Struct):
    type: str | None = None
    parentAgentId: str | None = None


class _State(msgspec.Struct):
    title: str | None = None
    workDir: str | None = None
    createdAt: str | None = None
    updatedAt: str | None = None
    agents: dict[str, _Agent] = {}


_decode_event = msgspec.json.Decoder(_Event).decode
_decode_state = msgspec.json.Decoder(_State).decode


def _loop(rec: _Event) -> dict[str, Any] | None:
    if rec.type == "context.append_loop_event" and isinstance(rec.event, dict):
        return rec.event
    return None


def _prompt(rec: _Event) -> dict[str, Any] | None:
    """A context message a person wrote (injected reminders are not)."""
    msg = rec.message
    if rec.type != "context.append_message" or not isinstance(msg, dict):
        return None
    origin = msg.get("origin")
    if isinstance(origin, dict) and origin.get("kind") == "injection":
        return None
    return msg if msg.get("role") == "user" else None


def _key(rec: _Event) -> Hashable | None:
    if _prompt(rec) is not None:
        return events.SOLO
    if rec.type is not None and rec.type not in RECORD_TYPES:
        drift.note(drift.RECORD, rec.type)
    event = _loop(rec)
    if event is None:
        return None
    kind = event.get("type")
    if kind not in LOOP_TYPES:
        drift.note(drift.RECORD, f"loop.{kind}")
    if kind == "content.part":
        part = event.get("part")
        if not isinstance(part, dict) or part.get("type") == "think":
            return None  # thinking is never a document
        if part.get("type") != "text":
            drift.note(drift.BLOCK, part.get("type"))
            if not isinstance(part.get("text"), str):
                return None
        return ("assistant", event.get("stepUuid"))  # an unknown part keeps its text
    if kind == "tool.call":
        return ("assistant", event.get("stepUuid"))
    if kind == "tool.result":
        return ("tool",)
    return None


def _build(
    records: list[_Event], offset: int, length: int, index: int, names: dict[str, str]
) -> SourceMessage | None:
    if not records:
        return None
    parts = Parts(names)
    role = "assistant"
    for rec in records:
        prompt = _prompt(rec)
        if prompt is not None:
            role = "user"
            parts.blocks(prompt.get("content"))
            continue
        event = _loop(rec) or {}
        kind = event.get("type")
        if kind == "content.part":
            parts.text((event.get("part") or {}).get("text"))
        elif kind == "tool.call":
            parts.call(event.get("toolCallId"), event.get("name"), event.get("args"))
        elif kind == "tool.result":
            role = "tool"
            result = event.get("result")
            text = block_text(result) or arguments_text(result)
            failed = isinstance(result, dict) and result.get("isError") is True
            parts.result(event.get("toolCallId"), None, text, failed)
    role, docs = parts.build(role)
    created = records[0].time
    return SourceMessage(index, offset, length, role, int(created) if created else None, docs)


def _load(
    handle: BinaryIO, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage | None:
    records = events.records_in(handle, offset, length, _decode_event, _key)
    if records is None:
        return None
    return _build(records, offset, length, index, {} if names is None else names)


def _call_names(path: Path) -> dict[str, str]:
    """Tool names by call id (a light pass), for a result loaded alone."""
    names: dict[str, str] = {}
    try:
        with open_source(path) as handle:
            for line in handle:
                if b'"tool.call"' not in line:
                    continue
                for rec in line_records(line, _decode_event):
                    event = _loop(rec) or {}
                    call_id, name = event.get("toolCallId"), event.get("name")
                    if isinstance(call_id, str) and isinstance(name, str):
                        names[call_id] = name
    except OSError:
        return names
    return names


class KimiFormat(NamedResultsFormat):
    """Reader for Kimi Code's per-agent wire logs; rebuilt on change."""

    name = NAME
    support = Support(
        agent="Kimi Code (Moonshot)",
        versions="wire protocol 1.4",
        where="`~/.kimi-code/sessions/wd_<dir>_<hash>/session_<id>/` (`$KIMI_CODE_HOME`), "
        "every OS; the macOS desktop app's embedded runtime",
        branches="linear (`/fork` starts a session of its own)",
        subagents="`agents/agent-N/wire.jsonl` beside `main`, apart",
        gaps="the legacy Python kimi-cli layout (`~/.kimi`, `context.jsonl`): no sample",
    )
    append_only = False
    resume: str | None = "kimi -r {id}"
    handoff: str | None = None
    source_names = frozenset({WIRE})

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """Under its root only the agents' ``wire.jsonl``; elsewhere the first line tells."""
        if fixed:
            return path.name == WIRE
        return None

    loader = staticmethod(_load)
    call_names = staticmethod(_call_names)

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        build = partial(_build, names={})  # filled in order: a call precedes its result
        yield from events.event_messages(path, result, budget, _decode_event, _key, build)

    def resume_id(self, session_id: str) -> str | None:
        """A sub-agent's run resumes as its session."""
        return session_id.split(":", 1)[0]

    def info(self, path: Path) -> SessionInfo:
        agent_dir = path.parent
        in_layout = path.name == WIRE and agent_dir.parent.name == "agents"
        if not in_layout:
            return SessionInfo(session_id=path.name.rsplit(".", 1)[0])
        session_dir = agent_dir.parent.parent
        agent = agent_dir.name
        info = SessionInfo(session_id=session_dir.name)
        try:
            state = _decode_state((session_dir / STATE).read_bytes())
        except (OSError, msgspec.DecodeError, RecursionError):
            state = _State()
        info.title = state.title or None
        info.workspace_root = state.workDir or None
        info.created_at = parse_time(state.createdAt)
        info.updated_at = parse_time(state.updatedAt)
        known = state.agents.get(agent)
        if agent != MAIN or (known is not None and known.type == "sub"):
            info.parent_id = session_dir.name
            info.session_id = f"{session_dir.name}:{agent}"
            info.subagent = True
        return info


FORMAT = KimiFormat()
