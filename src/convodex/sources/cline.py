"""Cline (CLI/SDK and VS Code extension), Roo Code and Kilo Code task histories.

Cline CLI/SDK: ``~/.cline/data/sessions/<id>/<id>.messages.json`` (``{version,
sessionId, agent, messages: [{id, role, content, ts, metadata}]}``) beside the
manifest ``<id>.json`` (cwd, title, times, ``metadata.fork.forkedFromSessionId``).
Compaction rewrites the file: what it removed is gone from disk; the summary
message (``metadata.kind`` ``compaction_summary``) and the ``<SYSTEM_NOTICE>``
blocks it appends to kept prompts are not user text. A messages file whose
``agent`` is not the ``lead`` belongs to a spawned sub-agent.

VS Code extensions (Cline ``saoudrizwan.claude-dev``, Roo Code
``rooveterinaryinc.roo-cline``, Kilo Code ``kilocode.kilo-code``):
``<globalStorage>/<extension>/tasks/<task id>/api_conversation_history.json``, a
JSON array of Anthropic-style messages; restoring a checkpoint truncates it, so the
file is the effective branch. ``<environment_details>`` blocks are context, not
user text; results of XML-style tools arrive as user text ``[tool for 'x']
Result:`` and are read as tool output. The title and workspace come from Cline's
``state/taskHistory.json`` when it is there.

Each message's byte span is its array element (``jsonspan``); nothing else is
decoded until a message is built.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

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
from convodex.sources.content import Parts, ToolUses, block_text
from convodex.sources.roots import CLINE_EXTENSIONS
from convodex.text.shown import remove_think_blocks

NAME = "cline"
MESSAGES_SUFFIX = ".messages.json"
TASK_FILE = "api_conversation_history.json"
EXTENSIONS = CLINE_EXTENSIONS  # format name -> extension id (``roots`` walks them)
_INJECTED = ("<SYSTEM_NOTICE>", "<environment_details>")
_ENVIRONMENT = re.compile(r"<environment_details>.*?(?:</environment_details>|$)", re.S)
_WRAPPERS = re.compile(r"</?(?:task|feedback|answer|user_message)>")
_SPOKEN = ("<feedback>", "<answer>", "<user_message>")  # the person, after a tool result
_TOOL_RESULT = re.compile(r"\A\[(\w+)(?: for [^\n]*?)?\] Result:[ \t]*\n?")
# Tools Cline-family agents called as XML inside their text before native tool calls.
_XML_TOOLS = (
    "execute_command read_file write_to_file replace_in_file apply_diff insert_content "
    "search_and_replace search_files list_files list_code_definition_names codebase_search "
    "browser_action use_mcp_tool access_mcp_resource web_fetch new_task switch_mode "
    "fetch_instructions update_todo_list load_mcp_documentation "
    "attempt_completion ask_followup_question plan_mode_respond"
).split()
_XML_SPOKEN = frozenset({"attempt_completion", "ask_followup_question", "plan_mode_respond"})
_XML_CALL = re.compile(r"<({})>(.*?)</\1>".format("|".join(_XML_TOOLS)), re.S)
_XML_TAG = re.compile(r"</?[a-z_]+>")


class _Metadata(msgspec.Struct):
    kind: str | None = None


class _Message(msgspec.Struct):
    role: str | None = None
    content: Any = None
    ts: int | float | None = None
    metadata: _Metadata | None = None


class _CallsFile(msgspec.Struct):
    messages: list[ToolUses] = []


class _Header(msgspec.Struct):
    sessionId: str | None = None
    agent: str | None = None


class _Fork(msgspec.Struct):
    forkedFromSessionId: str | None = None


class _ManifestMeta(msgspec.Struct):
    title: str | None = None
    fork: _Fork | None = None


class _Manifest(msgspec.Struct):
    session_id: str | None = None
    cwd: str | None = None
    workspace_root: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    prompt: str | None = None
    metadata: _ManifestMeta | None = None


class _HistoryItem(msgspec.Struct):
    id: str | None = None
    ts: int | float | None = None
    task: str | None = None
    cwdOnTaskInitialization: str | None = None
    workspace: str | None = None


_decode_message = msgspec.json.Decoder(_Message).decode
_decode_calls_list = msgspec.json.Decoder(list[ToolUses]).decode
_decode_calls_file = msgspec.json.Decoder(_CallsFile).decode
_decode_header = msgspec.json.Decoder(_Header).decode
_decode_manifest = msgspec.json.Decoder(_Manifest).decode
_decode_history = msgspec.json.Decoder(list[_HistoryItem]).decode


def _result_text(content: Any) -> str:
    """SDK tool results are ``[{query, result | error}]``: each query with what it gave."""
    items = content if isinstance(content, list) else []
    if not any(isinstance(i, dict) and ("query" in i or "result" in i) for i in items):
        return block_text(content)
    texts = []
    for item in items:
        if not isinstance(item, dict):
            continue
        for key in ("query", "result", "error"):
            value = item.get(key)
            texts.append(value if isinstance(value, str) else block_text(value))
    return "\n".join(t for t in texts if t)


# A user message's block types (Anthropic's, and the SDK's attached ``file``, which is
# not the person's words); any other is format drift (``drift``).
USER_BLOCKS = frozenset({"text", "tool_result", "image", "document", "file"})


def _user_parts(content: Any, parts: Parts) -> None:
    """A user message: prompts, tool results (blocks or XML-era text), no injected context."""
    legacy: list[str] | None = None  # the text of an XML-era tool result being read
    name = None

    def flush() -> None:
        if legacy is not None:
            body = "\n".join(t for t in legacy if t)
            failed = body.lstrip().startswith(("The tool execution failed", "<error>"))
            parts.result(None, name, body, failed)

    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and part.get("type") == "tool_result":
            body = part.get("content")
            items = body if isinstance(body, list) else []
            failed = part.get("is_error") is True or any(
                isinstance(i, dict) and (i.get("success") is False or bool(i.get("error")))
                for i in items
            )
            parts.result(part.get("tool_use_id"), part.get("name"), _result_text(body), failed)
            continue
        if isinstance(part, dict) and part.get("type") not in USER_BLOCKS:
            parts.unknown(part.get("type"), part)
            continue
        text = part.get("text") if isinstance(part, dict) and part.get("type") == "text" else part
        if not isinstance(text, str) or text.lstrip().startswith(_INJECTED):
            continue  # files, images, environment details, compaction notices
        text = _ENVIRONMENT.sub("", text)
        header = _TOOL_RESULT.match(text)
        if header is not None:
            flush()
            legacy, name = [text[header.end() :]], header.group(1)
        elif legacy is not None and not text.lstrip().startswith(_SPOKEN):
            legacy.append(text)
        else:
            flush()
            legacy = None
            parts.text(_WRAPPERS.sub("", text).strip())
    flush()


def _assistant_parts(content: Any, parts: Parts) -> None:
    """An answer: text without thinking; XML-era tool calls in it become tool calls."""
    for part in content if isinstance(content, list) else [content]:
        text = part.get("text") if isinstance(part, dict) and part.get("type") == "text" else part
        if not isinstance(text, str):
            parts.blocks([part])
            continue
        text = remove_think_blocks(text)
        for call in _XML_CALL.finditer(text):
            tool, body = call.group(1), call.group(2).strip()
            if tool in _XML_SPOKEN:
                parts.text(_XML_TAG.sub("", body).strip())  # words for the person
            else:
                parts.call(None, tool, body)
        parts.text(_XML_CALL.sub("", text).strip())


def _message(
    msg: _Message, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage:
    role = msg.role or ""
    created = None if msg.ts is None else int(msg.ts)
    if msg.metadata is not None and msg.metadata.kind == "compaction_summary":
        return SourceMessage(index, offset, length, role, created, [])  # a summary, not words
    parts = Parts(names)
    if role == "user":
        _user_parts(msg.content, parts)
    else:
        _assistant_parts(msg.content, parts)
    role, docs = parts.build(role)
    return SourceMessage(index, offset, length, role, created, docs)


def _load(
    handle: BinaryIO, offset: int, length: int, index: int, names: dict[str, str] | None = None
) -> SourceMessage | None:
    raw = read_at(handle, offset, length)
    if raw is None:
        return None
    try:
        return _message(_decode_message(raw), offset, length, index, names)
    except (msgspec.DecodeError, RecursionError):
        return None


def _call_names(path: Path) -> dict[str, str]:
    """Tool names by tool_use id: only block types, ids and names are decoded."""
    try:
        raw = path.read_bytes()
        start = jsonspan.skip_space(raw, 0)
        is_list = raw[start : start + 1] == b"["
        messages = _decode_calls_list(raw) if is_list else _decode_calls_file(raw).messages
    except (OSError, msgspec.DecodeError, RecursionError):
        return {}
    names: dict[str, str] = {}
    for message in messages:
        message.add_to(names)
    return names


def _read_json(path: Path, decode: Any) -> Any:
    try:
        return decode(path.read_bytes())
    except (OSError, msgspec.DecodeError, RecursionError):
        return None


@functools.lru_cache(maxsize=8)
def _history(path: str, size: int, mtime_ns: int) -> dict[str, _HistoryItem]:
    """Cline's task index, by task id (cached per file version)."""
    items = _read_json(Path(path), _decode_history) or []
    return {item.id: item for item in items if item.id}


_decode_history_item = msgspec.json.Decoder(_HistoryItem).decode
# Roo Code's own record of a task, in the task's folder (``TaskHistoryStore``).
HISTORY_ITEM = "history_item.json"


def _history_item(task_dir: Path) -> _HistoryItem | None:
    """The task's entry: Roo Code's ``history_item.json`` beside it, else the
    extension's task index (``state/taskHistory.json``)."""
    own: _HistoryItem | None = _read_json(task_dir / HISTORY_ITEM, _decode_history_item)
    if own is not None:
        return own
    index = task_dir.parent.parent / "state" / "taskHistory.json"
    try:
        st = os.stat(index)
    except OSError:
        return None
    return _history(str(index), st.st_size, st.st_mtime_ns).get(task_dir.name)


class ClineFormat(NamedResultsFormat):
    """One reader for the Cline family; each agent is registered under its own name."""

    append_only = False
    resume: str | None = None  # extensions reopen tasks from their History view

    loader = staticmethod(_load)
    call_names = staticmethod(_call_names)

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def claims(self, path: Path, fixed: bool) -> bool | None:
        if not fixed:
            return None
        sdk = self.name == NAME and path.name.endswith(MESSAGES_SUFFIX)
        return sdk or path.name == TASK_FILE

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        spans = jsonspan.array_spans(path, result, budget, ("messages",))
        names: dict[str, str] = {}  # filled in order: a call precedes its result
        with open(path, "rb") as handle:
            yield from messages_at(handle, spans, result, partial(_load, names=names))

    def info(self, path: Path) -> SessionInfo:
        if path.name.endswith(MESSAGES_SUFFIX):
            return _session_info(path)
        info = SessionInfo(session_id=path.parent.name)
        if info.session_id.isdigit():
            info.created_at = int(info.session_id)  # Cline task ids are creation times (ms)
        item = _history_item(path.parent)
        if item is not None:
            info.title = item.task
            info.workspace_root = item.cwdOnTaskInitialization or item.workspace
            info.created_at = int(item.ts) if item.ts is not None else info.created_at
        return info


def _session_info(path: Path) -> SessionInfo:
    stem = path.name[: -len(MESSAGES_SUFFIX)]
    info = SessionInfo(session_id=stem)
    header = _read_json(path, _decode_header)
    if isinstance(header, _Header):
        info.session_id = header.sessionId or stem
        info.subagent = header.agent not in (None, "lead")  # a spawned teammate
    manifest = _read_json(path.with_name(stem + ".json"), _decode_manifest)
    if isinstance(manifest, _Manifest):
        info.session_id = manifest.session_id or info.session_id
        info.workspace_root = manifest.workspace_root or manifest.cwd
        info.created_at = parse_time(manifest.started_at)
        info.updated_at = parse_time(manifest.ended_at)
        meta = manifest.metadata
        info.title = (meta.title if meta else None) or manifest.prompt
        if meta is not None and meta.fork is not None:
            info.parent_id = meta.fork.forkedFromSessionId
    return info


_SUPPORT = {
    "cline": Support(
        agent="Cline (CLI and VS Code)",
        versions="SDK sessions, VS Code tasks",
        where=(
            "`~/.cline/data/sessions/<id>/`; `<user dir>/globalStorage/"
            "saoudrizwan.claude-dev/tasks/<id>/`"
        ),
        branches="the task's history as saved (checkpoint restores truncate it)",
        subagents="team sessions apart",
    ),
    "roo_code": Support(
        agent="Roo Code",
        versions="VS Code tasks with `history_item.json`",
        where="`<user dir>/globalStorage/rooveterinaryinc.roo-cline/tasks/<id>/`",
        branches="the task's history as saved",
        subagents="orchestrator subtasks are their own tasks",
    ),
    "kilo_code": Support(
        agent="Kilo Code",
        versions="VS Code tasks",
        where="`<user dir>/globalStorage/kilocode.kilo-code/tasks/<id>/`",
        branches="the task's history as saved",
        subagents="subtasks are their own tasks",
    ),
}
FORMATS = {name: ClineFormat(name) for name in EXTENSIONS}
for _name, _format in FORMATS.items():
    _format.support = _SUPPORT[_name]
FORMAT = FORMATS[NAME]
