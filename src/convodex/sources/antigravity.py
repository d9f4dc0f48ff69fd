"""Google Antigravity (``agy`` CLI and IDE) step logs:
``~/.gemini/antigravity-cli/brain/<conversation id>/.system_generated/logs/transcript.jsonl``.

The IDE writes the same ``brain/`` under ``~/.gemini/antigravity`` (some builds
``antigravity-ide``). One step a line: ``{step_index, source, type, status,
created_at, content?, thinking?, tool_calls?}``. ``USER_INPUT`` is a prompt, its
typed text inside ``<USER_REQUEST>`` (``<ADDITIONAL_METADATA>`` and
``<USER_SETTINGS_CHANGE>`` are Antigravity's own); ``PLANNER_RESPONSE`` is the model's
answer, with ``tool_calls: [{name, args}]`` whose argument values are JSON-encoded
strings (``thinking`` is never indexed); the model steps after it (``RUN_COMMAND``,
``VIEW_FILE``, ``LIST_DIRECTORY``, ``CODE_ACTION``, ``INVOKE_SUBAGENT`` …) are the
tool results, named by their step type, consecutive ones one tool message;
``ERROR_MESSAGE`` is a tool error. System, ephemeral and checkpoint steps are
context Antigravity injects, not indexed. The log is read in file order
(``step_index`` may run out of it); a sub-agent is a conversation of its own, kept
apart: the one its parent's ``INVOKE_SUBAGENT`` step names as created.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.sources import drift, events
from convodex.sources.base import (
    Budget,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
    open_source,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.content import Parts

NAME = "antigravity"
TRANSCRIPT = "transcript.jsonl"
LOG = f".system_generated/logs/{TRANSCRIPT}"  # under ``brain/<conversation id>/``
# Steps that are not the model's work: context Antigravity adds to the conversation.
_CONTEXT_STEPS = frozenset(
    {"CONVERSATION_HISTORY", "CHECKPOINT", "EPHEMERAL_MESSAGE", "SYSTEM_MESSAGE"}
)
# Steps of a source other than the model that are known to hold nothing to search (any
# model step is a tool's result, whatever its type); any other is format drift.
_OTHER_STEPS = frozenset({"GENERIC"})
_REQUEST = re.compile(r"<USER_REQUEST>\s*(.*?)\s*</USER_REQUEST>", re.S)
_INJECTED = re.compile(r"<(ADDITIONAL_METADATA|USER_SETTINGS_CHANGE)>.*?</\1>\s*", re.S)


class _Call(msgspec.Struct):
    name: str | None = None
    args: Any = None


class _Step(msgspec.Struct):
    type: str | None = None
    source: str | None = None
    created_at: str | None = None
    content: Any = None
    tool_calls: list[_Call] | None = None


_decode_step = msgspec.json.Decoder(_Step).decode
_decode_any = msgspec.json.Decoder().decode


def user_text(text: str) -> str:
    """What the person typed: the ``<USER_REQUEST>`` bodies, else the text minus the
    blocks Antigravity adds."""
    requests = _REQUEST.findall(text)
    return "\n".join(requests) if requests else _INJECTED.sub("", text).strip()


def _arguments(args: Any) -> Any:
    """A call's arguments with each JSON-encoded value decoded."""
    if not isinstance(args, dict):
        return args
    out: dict[str, Any] = {}
    for key, value in args.items():
        try:
            out[key] = _decode_any(value) if isinstance(value, str) else value
        except msgspec.DecodeError:
            out[key] = value
    return out


def _key(step: _Step) -> Hashable | None:
    if step.type in ("USER_INPUT", "PLANNER_RESPONSE"):
        return events.SOLO
    if step.type in _CONTEXT_STEPS or step.type is None:
        return None
    if step.type == "ERROR_MESSAGE" or step.source == "MODEL":
        return ("tool",)
    if step.type not in _OTHER_STEPS:
        drift.note(drift.RECORD, step.type)  # a new kind of step: its text is kept
        return ("tool",) if isinstance(step.content, str) and step.content.strip() else None
    return None


def _build(steps: list[_Step], offset: int, length: int, index: int) -> SourceMessage | None:
    if not steps:
        return None
    parts = Parts()
    role = "tool"
    for step in steps:
        content = step.content if isinstance(step.content, str) else ""
        if step.type == "USER_INPUT":
            role = "user"
            parts.text(user_text(content))
        elif step.type == "PLANNER_RESPONSE":
            role = "assistant"
            parts.text(content)
            for call in step.tool_calls or ():
                parts.call(None, call.name, _arguments(call.args))
        else:
            failed = step.type == "ERROR_MESSAGE"
            parts.result(None, None if failed else (step.type or "").lower(), content, failed)
    role, docs = parts.build(role)
    if not docs:
        return None  # a planner step that only thought
    return SourceMessage(index, offset, length, role, parse_time(steps[0].created_at), docs)


def _load(handle: BinaryIO, offset: int, length: int, index: int) -> SourceMessage | None:
    steps = events.records_in(handle, offset, length, _decode_step, _key)
    return None if steps is None else _build(steps, offset, length, index)


def conversation_id(path: Path) -> str:
    """``brain/<id>/.system_generated/logs/transcript.jsonl`` → ``<id>``."""
    if path.name == TRANSCRIPT and path.parent.name == "logs" and len(path.parents) > 3:
        return path.parents[2].name
    return path.name.rsplit(".", 1)[0]


# ``"conversationId":  "<id>"`` in an ``INVOKE_SUBAGENT`` step: the child it created.
_CHILD = re.compile(rb'"conversationId\\?"\s*:\s*\\?"([0-9A-Za-z-]{8,64})')
_INVOKE = b"INVOKE_SUBAGENT"


@dataclass(slots=True)
class _Children:
    """Which conversation of a ``brain/`` folder created which: the ``INVOKE_SUBAGENT``
    steps of every step log in it, each log re-read only when it changed."""

    at: float = -1.0  # when the folder was last looked at (time.time())
    logs: dict[str, tuple[tuple[int, int], list[str]]] = field(default_factory=dict)
    parents: dict[str, str] = field(default_factory=dict)

    def refresh(self, brain: Path) -> None:
        self.at = time.time()
        logs: dict[str, tuple[tuple[int, int], list[str]]] = {}
        with contextlib.suppress(OSError), os.scandir(brain) as entries:
            for entry in entries:
                log = Path(entry.path) / LOG
                try:
                    st = os.stat(log)
                except OSError:
                    continue
                mark = (st.st_size, st.st_mtime_ns)
                known = self.logs.get(entry.name)
                logs[entry.name] = known if known and known[0] == mark else (mark, _named(log))
        self.logs = logs
        self.parents = {child: p for p, (_, kids) in logs.items() for child in kids if child != p}


def _named(log: Path) -> list[str]:
    """The conversations a step log's ``INVOKE_SUBAGENT`` steps created."""
    children: list[str] = []
    with contextlib.suppress(OSError), open_source(log) as handle:
        for line in handle:
            if _INVOKE in line:
                children.extend(m.decode() for m in _CHILD.findall(line))
    return children


_brains: dict[str, _Children] = {}


def parent_of(path: Path) -> str | None:
    """The conversation whose ``INVOKE_SUBAGENT`` created this step log's, if any.

    The folder is looked at again only when this log changed after the last look: a
    parent names its child when it creates it, before the child's log is done.
    """
    if len(path.parents) <= 3 or path.parents[1].name != ".system_generated":
        return None  # a step log elsewhere: no brain folder to look in
    brain = path.parents[3]
    children = _brains.setdefault(str(brain), _Children())
    try:
        changed = os.stat(path).st_mtime
    except OSError:
        return None
    if changed >= children.at:
        children.refresh(brain)
    return children.parents.get(conversation_id(path))


class AntigravityFormat(SourceFormat):
    """Reader for Antigravity's readable step logs; rebuilt on change."""

    name = NAME
    support = Support(
        agent="Google Antigravity (CLI and IDE)",
        versions="`agy` step logs of 2026",
        where="`~/.gemini/antigravity-cli/brain/`, `~/.gemini/antigravity/brain/`, every OS",
        branches="linear (the step log in file order)",
        subagents="conversations an `INVOKE_SUBAGENT` step created, apart",
        gaps="the binary stores (`conversations/*.db`, `.pb`) and `brain/*.md` artifacts",
    )
    append_only = False
    resume: str | None = "agy --conversation {id}"
    handoff: str | None = None
    source_names = frozenset({TRANSCRIPT})

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """Under its root only the step logs; elsewhere their first line tells."""
        return path.name == TRANSCRIPT if fixed else None

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        yield from events.event_messages(path, result, budget, _decode_step, _key, _build)

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        with open_source(path) as handle:
            return _load(handle, offset, length, index)

    def info(self, path: Path) -> SessionInfo:
        parent = parent_of(path)
        return SessionInfo(
            session_id=conversation_id(path), parent_id=parent, subagent=parent is not None
        )


FORMAT = AntigravityFormat()
