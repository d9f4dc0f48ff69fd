"""Qwen Code chats: ``~/.qwen/projects/<project>/chats/<session id>.jsonl``.

One record a line: ``uuid``, ``parentUuid``, ``sessionId``, ``type`` (``user``,
``assistant``, ``tool_result``, ``system`` with a ``subtype``) and a Gemini-style
``message.parts``. The records form a tree; like Qwen Code itself, the active
branch is the chain from the last record written (session artifacts excepted)
back to its root, stopping at a parent the file does not hold. A ``rewind`` is a
system record that re-roots the chain at an earlier record, so the rewound turns
are off the branch and never indexed. ``chat_compression`` records leave the
original messages in place: what was compacted stays searchable.

Several records may share a ``uuid`` (one message written in fragments): they are
one display message whose span runs from the first fragment to the last; ``load``
keeps only the lines of that span carrying the same ``uuid``. Records written
without a newline between them (a known writer fault) are split back into their
objects. Every record must name the session the file is named after; a file whose
records name another session is not that session's transcript (a source error).
Sub-agent records (``isSidechain``) are left out of the branch: a file of only
those is a sub-agent session, and ones inside a parent's file follow its
transcript, marked as sub-agent work.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.errors import SourceError
from convodex.sources import drift, gemini
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
from convodex.sources.content import Parts
from convodex.sources.jsonl import decoded_lines, records_at
from convodex.sources.tree import chain_to

NAME = "qwen"
SESSION_FILE = re.compile(r"^[0-9a-fA-F-]{32,36}\.jsonl$")
RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
MESSAGE_TYPES = frozenset({"user", "assistant", "tool_result"})
ARTIFACT_SUBTYPES = frozenset({"session_artifact_event", "session_artifact_snapshot"})
# User records the runtime writes (notifications, cron and goal turns): not the person's words.
RUNTIME_USER_SUBTYPES = frozenset({"goal_runtime", "cron", "notification"})
PAYLOAD_SUBTYPES = frozenset({"custom_title", "parent_session"})
HOOK_CONTEXT = "<qwen:user-prompt-submit-context>"  # hook output appended as the last part


class _Meta(msgspec.Struct):
    """Structure only: ``message`` is skipped, payloads stay raw bytes until asked for."""

    uuid: str | None = None
    parentUuid: str | None = None
    sessionId: str | None = None
    type: str | None = None
    subtype: str | None = None
    isSidechain: bool | None = None
    timestamp: str | None = None
    cwd: str | None = None
    systemPayload: msgspec.Raw = msgspec.Raw()


class _Payload(msgspec.Struct):
    displayText: str | None = None
    customTitle: str | None = None
    parentSessionId: str | None = None


class _Content(msgspec.Struct):
    role: str | None = None
    parts: Any = None


class _CallResult(msgspec.Struct):
    status: str | None = None
    error: Any = None
    resultDisplay: Any = None


class _Record(msgspec.Struct):
    uuid: str | None = None
    type: str | None = None
    subtype: str | None = None
    timestamp: str | None = None
    isSidechain: bool | None = None
    message: _Content | None = None
    systemPayload: _Payload | None = None
    toolCallResult: _CallResult | None = None


_decode_meta = msgspec.json.Decoder(_Meta).decode
_decode_record = msgspec.json.Decoder(_Record).decode
_decode_payload = msgspec.json.Decoder(_Payload).decode


@dataclass(slots=True)
class _Node:
    """One record's place in the tree, and the little listing needs from it."""

    parent: str | None
    type: str
    subtype: str | None
    fragments: list[tuple[int, int]]
    session_id: str
    timestamp: str | None
    cwd: str | None
    # A custom title or a parent session: decoded from the few records that set one.
    payload: _Payload | None


@dataclass(slots=True)
class _Tree:
    """The records by uuid, in the order first written, main and sidechain apart."""

    nodes: dict[str, _Node] = field(default_factory=dict)
    side: dict[str, _Node] = field(default_factory=dict)
    last: str | None = None  # the last non-artifact main record written
    last_side: str | None = None

    def chain(self) -> tuple[dict[str, _Node], list[str]]:
        """The effective branch; a file of sidechain records only is read as one."""
        nodes, leaf = self.nodes, self.last
        if not any(n.type in MESSAGE_TYPES for n in nodes.values()):
            nodes, leaf = self.side, self.last_side
        return nodes, chain_to(nodes, leaf)


def _expected_id(path: Path) -> str | None:
    return path.name[: -len(".jsonl")].lower() if SESSION_FILE.match(path.name) else None


def _tree(path: Path, result: ReadResult, budget: Budget) -> _Tree:
    """Pass one: every record's uuid, parent, type and byte fragments."""
    tree = _Tree()
    expected = _expected_id(path)
    for offset, length, _, meta in decoded_lines(path, result, budget, _decode_meta):
        if meta.type is not None and meta.type not in RECORD_TYPES:
            drift.note(drift.RECORD, meta.type)
        if not meta.uuid or not meta.sessionId or meta.type not in RECORD_TYPES:
            continue  # not a chat record
        session = meta.sessionId.lower()
        if expected is None:
            expected = session
        if session != expected:
            raise SourceError(str(path), "a record names another session than the file")
        span = (offset, length)
        nodes = tree.side if meta.isSidechain else tree.nodes
        node = nodes.get(meta.uuid)
        if node is None:
            payload = _payload(meta) if meta.subtype in PAYLOAD_SUBTYPES else None
            nodes[meta.uuid] = _Node(
                meta.parentUuid,
                meta.type,
                meta.subtype,
                [span],
                meta.sessionId,
                meta.timestamp,
                meta.cwd,
                payload,
            )
        else:
            node.fragments.append(span)
        if meta.type == "system" and meta.subtype in ARTIFACT_SUBTYPES:
            continue
        if meta.isSidechain:
            tree.last_side = meta.uuid
        else:
            tree.last = meta.uuid
    return tree


def _display_spans(nodes: dict[str, _Node], chain: list[str]) -> list[tuple[int, int]]:
    spans = []
    for key in chain:
        node = nodes[key]
        if node.type in MESSAGE_TYPES:
            start = node.fragments[0][0]
            end = max(s + n for s, n in node.fragments)
            spans.append((start, end - start))
    return spans


def _user_text(record: _Record, parts: list[Any]) -> str:
    """What the person typed: the recorded display text, else the parts without hook context."""
    payload = record.systemPayload
    if payload is not None and isinstance(payload.displayText, str):
        return payload.displayText
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    if len(texts) > 1 and texts[-1].lstrip().startswith(HOOK_CONTEXT):
        texts.pop()
    return "\n".join(t for t in texts if t)


def _response_text(response: Any) -> str:
    """A function response: Qwen wraps results as ``{"output": …}`` or ``{"error": …}``."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        for key in ("output", "error", "content", "text"):
            if isinstance(response.get(key), str):
                return str(response[key])
        return msgspec.json.encode(response).decode("utf-8") if response else ""
    return ""


def _message(records: list[_Record], offset: int, length: int, index: int) -> SourceMessage:
    first = records[0]
    parts_of = [p for r in records if r.message is not None for p in _list(r.message.parts)]
    kind = first.type or ""
    docs = Parts()
    if kind == "user":
        if first.subtype not in RUNTIME_USER_SUBTYPES:
            docs.text(_user_text(first, parts_of))
        role = "user"
    elif kind == "tool_result":
        result = next((r.toolCallResult for r in records if r.toolCallResult), None)
        failed = result is not None and (result.status == "error" or result.error is not None)
        for part in parts_of:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                text = _response_text(response.get("response"))
                failed_here = failed or (
                    isinstance(response.get("response"), dict) and "error" in response["response"]
                )
                docs.result(response.get("id"), response.get("name"), text, failed_here)
        role = "tool"
    else:
        for part in parts_of:
            if not isinstance(part, dict) or part.get("thought") is True:
                continue
            call = part.get("functionCall")
            if isinstance(call, dict):
                docs.call(call.get("id"), call.get("name"), call.get("args"))
            elif part and gemini.PART_KEYS.isdisjoint(part):
                name = next(iter(part))  # a Gemini-style part is named by its key
                docs.unknown(name, part[name])
            else:
                docs.text(part.get("text"))
        role = "assistant"
    role, documents = docs.build(role)
    message = SourceMessage(index, offset, length, role, parse_time(first.timestamp), documents)
    message.subagent = bool(first.isSidechain)
    return message


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _load(handle: BinaryIO, offset: int, length: int, index: int) -> SourceMessage | None:
    lines = records_at(handle, offset, length, _decode_record)
    if not lines or lines[0].type not in MESSAGE_TYPES:
        return None
    key = lines[0].uuid
    return _message([r for r in lines if r.uuid == key], offset, length, index)


class QwenFormat(SourceFormat):
    """Reader for Qwen Code chats; rebuilt on change (a rewind moves the branch)."""

    name = NAME
    support = Support(
        agent="Qwen Code",
        versions="0.14–0.21",
        where="`~/.qwen/projects/*/chats/` (`$QWEN_HOME`), legacy `~/.qwen/tmp/*/chats/`",
        branches="the chain to the last record (rewinds)",
        subagents="in-file sidechains, apart",
    )
    append_only = False
    resume: str | None = "qwen --resume {id}"
    # Starts the agent with a first prompt, for ``resume --in``:
    # Gemini CLI's flag, kept by the fork.
    handoff: str | None = "qwen --prompt-interactive {prompt}"

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        tree = _tree(path, result, budget)
        nodes, chain = tree.chain()
        spans = _display_spans(nodes, chain)
        if nodes is tree.nodes:
            # Sub-agent records inside the parent's file follow it, marked as such.
            spans += _display_spans(tree.side, list(tree.side))
        with open(path, "rb") as handle:
            yield from messages_at(handle, spans, result, _load)

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        return load_message(path, offset, length, index, _load)

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """Under a Qwen root: chats are named by session id, and every ``.jsonl`` in a
        ``chats`` folder is one whatever its name (older releases, renamed copies)."""
        if not fixed:
            return None
        in_chats = path.parent.name == "chats" and path.name.endswith(".jsonl")
        return in_chats or SESSION_FILE.match(path.name) is not None

    def info(self, path: Path) -> SessionInfo:
        stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
        info = SessionInfo(session_id=stem, archived=path.parent.name == "archive")
        try:
            tree = _tree(path, ReadResult(0, 0), Budget.from_env())
        except (OSError, SourceError):
            return info
        nodes, chain = tree.chain()
        info.subagent = nodes is tree.side and bool(chain)
        branch = [nodes[k] for k in chain]
        if _expected_id(path) is None and branch:
            info.session_id = branch[0].session_id
        times = [t for t in (parse_time(n.timestamp) for n in branch) if t is not None]
        if times:
            info.created_at, info.updated_at = min(times), max(times)
        info.workspace_root = next((n.cwd for n in reversed(branch) if n.cwd), None)
        for node in branch:
            if node.payload is None:
                continue
            if node.subtype == "custom_title" and node.payload.customTitle:
                info.title = node.payload.customTitle  # the last one on the branch wins
            elif node.subtype == "parent_session" and node.payload.parentSessionId:
                info.parent_id = node.payload.parentSessionId
                info.subagent = True  # spawned by another session
        return info


def _payload(meta: _Meta) -> _Payload | None:
    if meta.type != "system" or not len(meta.systemPayload):
        return None
    try:
        return _decode_payload(meta.systemPayload)
    except msgspec.DecodeError:
        return None


FORMAT = QwenFormat()
