"""GitHub Copilot Chat in VS Code: ``<user dir>/workspaceStorage/<hash>/chatSessions/``.

A ``.json`` session is VS Code's serialized chat model (``{version, sessionId,
customTitle, creationDate, lastMessageDate, requests: [...]}``); a request holds
the person's ``message`` and the ``response`` parts (``markdownContent``,
``thinking``, ``toolInvocationSerialized`` …). Each request is two display
messages, the prompt then the answer (display indexes ``2i`` and ``2i + 1``),
both spanning the request's element in the file. Tool invocations are
``tool_input`` (the tool id with its specific data, or the invocation message);
results are recorded only as ``resultDetails`` (``{input, output: [{value}],
isError}``), read as tool output or error when present.
Thinking is never indexed. Newer VS Code writes ``.jsonl``: an operation log whose
first line (``kind`` 0) is the full state and whose later lines set (1), push or
splice (2) and delete (3) values at a key path; it is replayed to the same shape,
and a request's span is the line that last changed it. Editing an earlier request
drops the later ones, so the session is always its effective branch.

The workspace is the folder named by ``workspace.json`` beside ``chatSessions``;
chats opened without a folder (``globalStorage/emptyWindowChatSessions``) have none.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import msgspec

from convodex.sources import drift, jsonspan
from convodex.sources.base import (
    Budget,
    LineError,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
)
from convodex.sources.content import Parts
from convodex.sources.jsonl import decoded_lines, error_class

NAME = "copilot_vscode"
SESSION_DIRS = frozenset({"chatSessions", "emptyWindowChatSessions", "transferredChatSessions"})
_TEXT_KINDS = frozenset({"markdownContent", "markdownVuln"})
# The other response parts the Chat view writes (VS Code's chat progress kinds): any
# kind not here is format drift (``drift``), its ``value``/``content``/``text`` kept.
RESPONSE_KINDS = _TEXT_KINDS | {
    "toolInvocationSerialized",
    "toolInvocation",
    "prepareToolInvocation",
    "inlineReference",
    "thinking",
    "codeblockUri",
    "codeCitation",
    "textEditGroup",
    "notebookEditGroup",
    "undoStop",
    "progressMessage",
    "progressTask",
    "progressTaskSerialized",
    "progressTaskResult",
    "confirmation",
    "elicitation",
    "elicitationSerialized",
    "command",
    "extensions",
    "warning",
    "treeData",
    "multiDiffData",
    "mcpServersStarting",
    "pullRequest",
    "reference",
    "references",
    "agentDetection",
    "clearToPreviousToolInvocation",
}
# The operation log's kinds: the full state, set, push or splice, delete.
OP_KINDS = frozenset({0, 1, 2, 3})


class _Request(msgspec.Struct):
    timestamp: int | float | None = None
    message: Any = None
    response: Any = None


class _Header(msgspec.Struct):
    sessionId: str | None = None
    customTitle: str | None = None
    creationDate: int | float | None = None
    lastMessageDate: int | float | None = None


class _Op(msgspec.Struct):
    kind: int | None = None
    k: list[str | int] | None = None
    v: Any = None
    i: int | None = None


class _Workspace(msgspec.Struct):
    folder: str | None = None
    workspace: str | None = None


_decode_request = msgspec.json.Decoder(_Request).decode
_decode_header = msgspec.json.Decoder(_Header).decode
_decode_op = msgspec.json.Decoder(_Op).decode
_decode_workspace = msgspec.json.Decoder(_Workspace).decode
_convert_request = functools.partial(msgspec.convert, type=_Request)


def _text(value: Any) -> str:
    """A markdown part's text: a string, ``{value}`` or ``{content: {value}}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("value", "content", "text"):
            if key in value:
                return _text(value[key])
    return ""


def _reference(value: Any, name: Any) -> str:
    """How the Chat view shows an inline reference: its name, else its file's name."""
    if isinstance(name, str) and name:
        return name
    if isinstance(value, dict):
        if isinstance(value.get("name"), str):
            return str(value["name"])
        uri = value.get("uri", value)
        if isinstance(uri, dict):
            where = uri.get("path") or uri.get("fsPath") or uri.get("external") or ""
            return str(where).rstrip("/").rsplit("/", 1)[-1]
    return ""


def _invocation(parts: Parts, item: dict[str, Any]) -> None:
    data = item.get("toolSpecificData")
    arguments = data if data is not None else _text(item.get("invocationMessage"))
    parts.call(item.get("toolCallId"), item.get("toolId"), arguments)
    details = item.get("resultDetails")
    if isinstance(details, dict) and "output" in details:  # {input, output: [{value}], isError}
        output = details["output"]
        items = output if isinstance(output, list) else [output]
        text = "\n".join(t for t in (_text(o) for o in items) if t)
        failed = details.get("isError") is True
        parts.result(item.get("toolCallId"), item.get("toolId"), text, failed)


def _message(request: _Request, offset: int, length: int, index: int) -> SourceMessage:
    """Display message ``index``: the prompt (even) or the answer (odd) of one request."""
    parts = Parts()
    if index % 2 == 0:
        role = "user"
        message = request.message
        parts.text(message.get("text") if isinstance(message, dict) else _text(message))
    else:
        role = "assistant"
        run: list[str] = []  # one stretch of prose: VS Code renders its pieces as one
        for item in request.response if isinstance(request.response, list) else ():
            if not isinstance(item, dict):
                continue
            kind = item.get("kind")
            if kind == "toolInvocationSerialized":
                parts.text("".join(run))
                run = []
                _invocation(parts, item)
            elif kind in _TEXT_KINDS or (kind is None and "value" in item):
                run.append(_text(item))
            elif kind == "inlineReference":  # a file named inside the prose
                run.append(_reference(item.get("inlineReference"), item.get("name")))
            elif kind is not None and kind not in RESPONSE_KINDS:
                drift.note(drift.BLOCK, kind)
                run.append(_text(item))
        parts.text("".join(run))
    created = None if request.timestamp is None else int(request.timestamp)
    role, docs = parts.build(role)
    return SourceMessage(index, offset, length, role, created, docs)


def _apply(state: dict[str, Any], op: _Op) -> None:
    """One operation of the log (VS Code's object mutation log) on the replayed state."""
    keys = op.k or []
    if op.kind == 0 and isinstance(op.v, dict):
        state.clear()
        state.update(op.v)
        return
    if not keys:
        return
    parent: Any = state
    for key in keys[:-1]:
        parent = _child(parent, key)
    last = keys[-1]
    if op.kind == 1:
        if isinstance(parent, dict):
            parent[str(last)] = op.v
        elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
            parent[last] = op.v
    elif op.kind == 2:
        target = _child(parent, last)
        if isinstance(target, list):
            if op.i is not None:
                del target[op.i :]
            if isinstance(op.v, list):
                target.extend(op.v)
    elif op.kind == 3:
        if isinstance(parent, dict):
            parent.pop(str(last), None)
        elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
            del parent[last]


def _child(value: Any, key: str | int) -> Any:
    if isinstance(value, dict):
        return value.get(str(key))
    if isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
        return value[key]
    return None


def _origins(origins: list[tuple[int, int]], op: _Op, span: tuple[int, int], size: int) -> None:
    """Keep, per request, the span of the line that last changed it."""
    keys = op.k or []
    if op.kind == 0 or (op.kind == 1 and keys == ["requests"]):
        origins[:] = [span] * size
    elif keys == ["requests"] and op.kind == 2:
        del origins[op.i if op.i is not None else len(origins) :]
        origins.extend([span] * (size - len(origins)))
    elif len(keys) >= 2 and keys[0] == "requests" and isinstance(keys[1], int):
        if op.kind == 3 and len(keys) == 2:
            del origins[keys[1] : keys[1] + 1]
        elif 0 <= keys[1] < len(origins):
            origins[keys[1]] = span


@dataclass(frozen=True, slots=True)
class _Replay:
    """A ``.jsonl`` log replayed: the final state and where each request was written."""

    state: dict[str, Any]
    origins: list[tuple[int, int]]
    errors: list[LineError]
    end: int


def _replay(path: Path, budget: Budget) -> _Replay:
    result = ReadResult(0, 0)
    state: dict[str, Any] = {}
    origins: list[tuple[int, int]] = []
    for offset, length, _, op in decoded_lines(path, result, budget, _decode_op):
        if op.kind not in OP_KINDS:
            drift.note(drift.RECORD, f"op.{op.kind}")
        _apply(state, op)
        requests = state.get("requests")
        _origins(origins, op, (offset, length), len(requests) if isinstance(requests, list) else 0)
    return _Replay(state, origins, result.errors, result.end_offset)


@functools.lru_cache(maxsize=4)
def _replayed(path: str, inode: int, size: int, mtime_ns: int) -> _Replay:
    """Search loads one message at a time: the replay is kept until the file changes."""
    return _replay(Path(path), Budget.from_env())


def _current(path: Path) -> _Replay:
    st = os.stat(path)
    return _replayed(str(path), st.st_ino, st.st_size, st.st_mtime_ns)


def _log_messages(path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
    log = _replay(path, budget)
    result.errors.extend(log.errors)
    result.end_offset = result.bytes_read = log.end
    requests = log.state.get("requests")
    for n, raw in enumerate(requests if isinstance(requests, list) else ()):
        offset, length = log.origins[n] if n < len(log.origins) else (0, 0)
        for _ in range(2):
            yield _request_message(raw, offset, length, result)


def _request_message(raw: Any, offset: int, length: int, result: ReadResult) -> SourceMessage:
    index = result.next_index
    result.next_index += 1
    try:
        return _message(_convert_request(raw), offset, length, index)
    except msgspec.ValidationError as exc:
        result.errors.append(LineError(offset, error_class(exc)))
        return SourceMessage(index, offset, length, "", None, [])


class CopilotVscodeFormat(SourceFormat):
    """Reader for VS Code chat sessions (``.json`` and ``.jsonl``); rebuilt on change."""

    name = NAME
    support = Support(
        agent="GitHub Copilot Chat (VS Code)",
        versions="chat sessions v3, operation logs",
        where="`<user dir>/workspaceStorage/<hash>/chatSessions/`, `globalStorage/*ChatSessions/`",
        branches="the replayed final state",
        subagents="—",
    )
    append_only = False
    resume: str | None = None  # reopened from the Chat view's history, not a shell

    def claims(self, path: Path, fixed: bool) -> bool | None:
        if not fixed:
            return None
        return path.parent.name in SESSION_DIRS and path.name.endswith((".json", ".jsonl"))

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        if path.name.endswith(".jsonl"):
            yield from _log_messages(path, result, budget)
            return
        spans = jsonspan.array_spans(path, result, budget, ("requests",))
        with open(path, "rb") as handle:
            for offset, length in spans:
                handle.seek(offset)
                try:
                    request = _decode_request(handle.read(length))
                except (msgspec.DecodeError, RecursionError) as exc:
                    result.errors.append(LineError(offset, error_class(exc)))
                    request = _Request()
                for _ in range(2):
                    message = _message(request, offset, length, result.next_index)
                    result.next_index += 1
                    yield message

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        if path.name.endswith(".jsonl"):
            requests = _current(path).state.get("requests")
            if not isinstance(requests, list) or index // 2 >= len(requests):
                return None
            try:
                return _message(_convert_request(requests[index // 2]), offset, length, index)
            except msgspec.ValidationError:
                return None
        with open(path, "rb") as handle:
            handle.seek(offset)
            raw = handle.read(length)
        if len(raw) != length:
            return None
        try:
            return _message(_decode_request(raw), offset, length, index)
        except (msgspec.DecodeError, RecursionError):
            return None

    def info(self, path: Path) -> SessionInfo:
        stem = path.name.rsplit(".", 1)[0]
        info = SessionInfo(session_id=stem, workspace_root=workspace_of(path))
        header = _Header()
        try:
            if path.name.endswith(".jsonl"):
                header = msgspec.convert(_current(path).state, _Header)
            else:
                header = _decode_header(path.read_bytes())
        except (OSError, msgspec.DecodeError, RecursionError):
            pass
        info.session_id = header.sessionId or stem
        info.title = header.customTitle
        info.created_at = None if header.creationDate is None else int(header.creationDate)
        info.updated_at = None if header.lastMessageDate is None else int(header.lastMessageDate)
        return info


def workspace_of(path: Path) -> str | None:
    """The folder ``workspace.json`` names for the storage folder holding ``chatSessions``."""
    found = _read_workspace(path.parent.parent / "workspace.json")
    uri = found.folder or found.workspace if found else None
    return None if uri is None else uri_path(uri)


def _read_workspace(path: Path) -> _Workspace | None:
    try:
        return _decode_workspace(path.read_bytes())
    except (OSError, msgspec.DecodeError):
        return None


def uri_path(uri: str) -> str:
    """``file:///home/me/app`` → ``/home/me/app``; other schemes (remotes) stay URIs."""
    parts = urlparse(uri)
    if parts.scheme != "file":
        return uri
    path = unquote(parts.path)
    if sys.platform == "win32" and len(path) > 2 and path[0] == "/" and path[2] == ":":
        path = path[1:]  # /c:/Users/… → c:/Users/…
    return path


FORMAT = CopilotVscodeFormat()
