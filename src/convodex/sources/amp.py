"""Amp (Sourcegraph) threads: ``~/.local/share/amp/threads/T-<id>.json``.

``$XDG_DATA_HOME/amp/threads`` on Linux and macOS. One JSON document a thread,
rewritten in place (``v`` counts its revisions): ``{id, created, title?, env,
messages: [{role, messageId, content: [...], meta: {sentAt}, usage: {timestamp}}]}``.
Content blocks are Anthropic-style: ``text``, ``thinking`` (never indexed),
``tool_use {id, name, input}``, and ``tool_result {toolUseID, run: {status,
result}}`` in the next user message, naming its tool only through the call's id.
A thread has no branches in the file (handoffs and forks are threads of their own)
and Amp keeps no sub-agent threads. Each message's byte span is its array element.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote, urlparse

import msgspec

from convodex.sources import jsonspan
from convodex.sources.base import (
    Budget,
    NamedResultsFormat,
    ReadResult,
    SessionInfo,
    SourceMessage,
    Support,
    messages_at,
    read_at,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.content import SILENT_BLOCKS, Parts, ToolUses, block_text
from convodex.text.documents import arguments_text

NAME = "amp"
THREAD_DIRS = frozenset({"threads", "threads3"})  # the CLI's, the old VS Code extension's
# Run states of a tool result that mean it did not do its work.
_FAILED = frozenset({"error", "cancelled", "rejected-by-user"})


class _Meta(msgspec.Struct):
    sentAt: int | float | None = None


class _Usage(msgspec.Struct):
    timestamp: str | None = None


class _Message(msgspec.Struct):
    role: str | None = None
    content: Any = None
    meta: _Meta | None = None
    usage: _Usage | None = None


class _CallsFile(msgspec.Struct):
    messages: list[ToolUses] = []


class _Tree(msgspec.Struct):
    uri: str | None = None


class _Initial(msgspec.Struct):
    trees: list[_Tree] = []


class _Env(msgspec.Struct):
    initial: _Initial | None = None


class _Thread(msgspec.Struct):
    """The thread's facts; its messages are skipped unread."""

    id: str | None = None
    title: str | None = None
    created: int | float | None = None
    env: _Env | None = None


_decode_message = msgspec.json.Decoder(_Message).decode
_decode_calls = msgspec.json.Decoder(_CallsFile).decode
_decode_thread = msgspec.json.Decoder(_Thread).decode


def _result_text(run: Any) -> tuple[str, bool]:
    """A tool run's output (text, else its JSON) and whether it failed."""
    if not isinstance(run, dict):
        return "", False
    result = run.get("result")
    text = block_text(result) or arguments_text(result)
    error = run.get("error")
    if error:
        text = "\n".join(t for t in (text, block_text(error) or arguments_text(error)) if t)
    return text, run.get("status") in _FAILED


def _parts(content: Any, parts: Parts) -> None:
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            parts.text(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.text(block.get("text"))
        elif kind == "tool_use":
            # Older threads describe a call in words only ({"text": "Writing …"}).
            arguments = block.get("input", block.get("text"))
            parts.call(block.get("id"), block.get("name"), arguments)
        elif kind == "tool_result":
            text, failed = _result_text(block.get("run"))
            parts.result(block.get("toolUseID"), None, text, failed)
        elif kind not in SILENT_BLOCKS:
            parts.unknown(kind, block)


def _created(msg: _Message) -> int | None:
    if msg.meta is not None and msg.meta.sentAt is not None:
        return int(msg.meta.sentAt)
    return parse_time(msg.usage.timestamp) if msg.usage is not None else None


def _load(
    handle: BinaryIO, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage | None:
    raw = read_at(handle, offset, length)
    if raw is None:
        return None
    try:
        msg = _decode_message(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    parts = Parts(names)
    _parts(msg.content, parts)
    role, docs = parts.build(msg.role or "")
    return SourceMessage(index, offset, length, role, _created(msg), docs)


def _call_names(path: Path) -> dict[str, str]:
    """Tool names by tool_use id: only block types, ids and names are decoded."""
    try:
        thread = _decode_calls(path.read_bytes())
    except (OSError, msgspec.DecodeError, RecursionError):
        return {}
    names: dict[str, str] = {}
    for message in thread.messages:
        message.add_to(names)
    return names


def _path_of(uri: str | None) -> str | None:
    """A workspace tree's ``file://`` URI as a path."""
    if not uri:
        return None
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


class AmpFormat(NamedResultsFormat):
    """Reader for Amp thread files; rebuilt on change (Amp rewrites them whole)."""

    name = NAME
    support = Support(
        agent="Amp (Sourcegraph)",
        versions="thread JSON (`v` revisions), CLI and VS Code",
        where="`~/.local/share/amp/threads` (`$XDG_DATA_HOME`), Linux and macOS",
        branches="linear (a handoff or fork is a thread of its own)",
        subagents="— (Amp keeps no sub-agent threads)",
        gaps="threads kept only on Amp's servers; the VS Code extension's `threads3`",
    )
    append_only = False
    resume: str | None = "amp threads continue {id}"
    handoff: str | None = None
    source_dirs = THREAD_DIRS

    loader = staticmethod(_load)
    call_names = staticmethod(_call_names)

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """Under its root every ``.json``; elsewhere a ``T-*.json`` in a threads folder
        (else the document's keys tell, see ``discover``)."""
        if not path.name.endswith(".json"):
            return False if fixed else None
        if fixed:
            return True
        return (path.name.startswith("T-") and path.parent.name in THREAD_DIRS) or None

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        spans = jsonspan.array_spans(path, result, budget, ("messages",))
        names: dict[str, str] = {}  # filled in order: a call precedes its result
        with open(path, "rb") as handle:
            yield from messages_at(handle, spans, result, partial(_load, names=names))

    def info(self, path: Path) -> SessionInfo:
        info = SessionInfo(session_id=path.stem)
        try:
            thread = _decode_thread(path.read_bytes())
        except (OSError, msgspec.DecodeError, RecursionError):
            return info
        info.session_id = thread.id or path.stem
        info.title = thread.title or None
        info.created_at = int(thread.created) if thread.created is not None else None
        initial = thread.env.initial if thread.env is not None else None
        if initial is not None and initial.trees:
            info.workspace_root = _path_of(initial.trees[0].uri)
        return info


FORMAT = AmpFormat()
