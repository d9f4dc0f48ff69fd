"""Claude Code projects (SPEC L1.3): ``~/.claude/projects/<slug>/<session>.jsonl``.

Every line is a record; ``uuid``/``parentUuid`` make a tree. The effective
transcript is the chain from the root to the most recent leaf (the leaf written
last), so turns abandoned by a rewind are not searchable. A ``compact_boundary``
has no ``parentUuid`` but names its predecessor in ``logicalParentUuid``. Records
without a usable parent (old v1.0 logs have ``parentUuid: null`` everywhere, some
parents dangle, a preserved tail is re-written after the boundary naming it)
continue the record written before them. A ``uuid`` written again is
ignored (the first record stays, and the session does not end there) unless only
the later one has something to read (the first is ``"message":"error"`` or has no
content): the later then takes the first one's place and parent. Sidechain
records belong to sub-agents: they are left out of the main transcript;
``subagents/agent-*.jsonl`` files are indexed as sub-agent sessions of their parent.

One API message streamed as several lines sharing ``message.id`` is one display
message. Its stored span runs from the first to the last of those lines; ``load``
keeps only the lines in the span that carry the same ``message.id`` (tool results
written in between belong to the next message). ``thinking`` is never indexed.
Unknown line types are skipped and counted (``drift``); only lines that are not JSON
objects are errors.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convodex.sources import drift, session_log
from convodex.sources.base import (
    Budget,
    FileMemo,
    NamedResultsFormat,
    ReadResult,
    SessionInfo,
    SourceBranch,
    SourceMessage,
    Support,
    messages_at,
    open_source,
    read_span,
)
from convodex.sources.claude_info import parse_time, scan_info, title_of
from convodex.sources.claude_tree import (
    Branch,
    Node,
    RecordTree,
    branch_spans,
    display_spans,
    run_root,
)
from convodex.sources.content import Parts, ToolUses, block_text
from convodex.sources.jsonl import (
    KeptRecords,
    decoded_lines,
    keeps_records,
    line_blocks,
    records_at,
)
from convodex.text.documents import (
    Document,
    tool_call_document,
    tool_result_document,
)

NAME = "claude_code"
MESSAGE_TYPES = frozenset({"user", "assistant"})
LEGACY_TOOL_TYPES = frozenset({"tool_use", "tool_result"})
# Line types known to hold no message (settings, snapshots, links, titles): any other
# type is counted as format drift (``drift``).
META_TYPES = frozenset(
    "summary custom-title ai-title agent-name last-prompt system attachment progress"
    " file-history-snapshot queue-operation permission-mode mode worktree-state"
    " frame-link pr-link bridge-session atis-latch started result relocated".split()
)
INFO_SCAN_BYTES = 32 * 1024 * 1024
# The run of a sidechain record that names none; the reader puts the run's first
# record's uuid in its place (``ClaudeCodeFormat.load``).
SIDECHAIN = "sidechain"


class _MessageId(msgspec.Struct):
    id: str | None = None
    content: msgspec.Raw = msgspec.Raw()  # its bytes, not decoded: is there any?


class _Meta(msgspec.Struct):
    """Structure only: message bodies are skipped by the decoder, never copied."""

    type: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    logicalParentUuid: str | None = None
    isSidechain: bool | None = None
    message: _MessageId | str | None = None
    sessionId: str | None = None
    agentId: str | None = None


class _Message(msgspec.Struct):
    role: str | None = None
    id: str | None = None
    content: Any = None


class _Record(msgspec.Struct):
    """A whole record: its structure (the fields of ``_Meta``) and its body."""

    type: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    logicalParentUuid: str | None = None
    sessionId: str | None = None
    timestamp: str | None = None
    isMeta: bool | None = None
    isCompactSummary: bool | None = None
    isSidechain: bool | None = None
    agentId: str | None = None  # the sub-agent run a sidechain record belongs to
    message: _Message | str | None = None
    # legacy top-level tool records
    name: str | None = None
    input: Any = None
    output: Any = None
    content: Any = None
    is_error: bool | None = None


class _SubMeta(msgspec.Struct):
    agentType: str | None = None
    description: str | None = None


_decode_meta = msgspec.json.Decoder(_Meta).decode
_decode_record = msgspec.json.Decoder(_Record).decode
_decode_submeta = msgspec.json.Decoder(_SubMeta).decode


def effective_spans(
    path: Path,
    result: ReadResult,
    budget: Budget,
    sidechains: list[tuple[int, int]] | None = None,
    kept: KeptRecords[_Record] | None = None,
    linear: bool = False,
    runs: dict[int, str] | None = None,
    branches: list[Branch] | None = None,
) -> list[tuple[int, int]]:
    """Pass one: the tree from structural fields, then the spans of the chosen chain.

    ``runs``: each sidechain span's sub-agent run (its ``agentId``, else the uuid of
    the run's first record), by offset. ``linear``: the writer never forks (iFlow
    writes the parts of one streamed answer as siblings under one parent): every
    record counts, in file order.

    Sidechain records in a main file are sub-agent work; their spans (every one, in
    file order: each sub-agent run is its own branch) go to ``sidechains``. With
    ``kept``, every record is decoded whole and the message records are kept there,
    so building the messages decodes nothing again. ``branches`` receives the main
    transcript's abandoned branches (rewound or edited turns), when asked.
    """
    main, side = RecordTree(), RecordTree()
    own = _stem(path.name)
    leaf: int | None = None  # the last record of the file's own session
    run_of: dict[str, str] = {}  # sidechain record key -> its sub-agent run
    current: str | None = None
    blank: set[str] = set()  # records first written with nothing to read
    decode: Callable[[bytes], _Meta | _Record] = _decode_meta if kept is None else _decode_record
    for offset, length, body, rec in decoded_lines(path, result, budget, decode):
        kind = rec.type
        is_message = kind in MESSAGE_TYPES or kind in LEGACY_TOOL_TYPES
        if not is_message and kind is not None and kind not in META_TYPES:
            drift.note(drift.RECORD, kind)
        if is_message and kept is not None:
            kept.add(offset, rec)  # type: ignore[arg-type]  # decoded as a _Record
        uuid = rec.uuid
        if uuid is None and not is_message:
            continue  # snapshots, modes, queue operations: not in the tree
        message = rec.message
        message_id = message.id if message is not None and not isinstance(message, str) else None
        node = (
            rec.parentUuid or rec.logicalParentUuid,
            offset,
            length,
            is_message,
            kind == "assistant",
            message_id,
        )
        key = uuid if uuid is not None else f"@{offset}"
        tree = side if rec.isSidechain else main
        if key in tree.keys:  # written again: not a new record, nor the session's end
            if key in blank and is_message and not _blank(rec) and _readable(rec, body):
                tree.replace(key, node)
                blank.discard(key)
            continue
        if is_message and _blank(rec):
            blank.add(key)
        if rec.isSidechain:
            # A run: records linked by parent (a parent the file lacks: the run
            # written last), and every record naming its agent.
            parent = node[0]
            if parent is None or (parent not in run_of and current is None):
                current = run_of[key] = key  # a new run starts
            else:
                run_of[key] = run_root(run_of, parent if parent in run_of else current or key)
            if rec.agentId:
                agent = run_root(run_of, f"agent:{rec.agentId}")
                run_of[run_of[key]] = agent  # the two runs are one
            side.add(key, node)
            continue
        main.add(key, node)
        if rec.sessionId == own:
            leaf = main.keys[key]
    if path.parent.name == "subagents" or not main.has_messages():
        # A sub-agent's own file: its records, flagged as a sidechain or not.
        tree = side if side.has_messages() else main
        return display_spans(tree.nodes if linear else tree.chain())
    if sidechains is not None:
        # Each sub-agent run (a Task call) is a session of its own, in file order.
        by_run: dict[str, list[Node]] = {}
        for key, position in side.keys.items():
            by_run.setdefault(run_root(run_of, key), []).append(side.nodes[position])
        for label, nodes in by_run.items():
            spans = display_spans(nodes)
            sidechains.extend(spans)
            if runs is not None:
                runs.update((offset, label.removeprefix("agent:")) for offset, _ in spans)
    # Another session's records written into this file (interleaved) do not decide
    # where this session ends: its own last record does.
    if linear or branches is None:
        return display_spans(main.nodes if linear else main.chain(leaf))
    chain = main.positions(leaf)
    owners: list[int] = []
    spans = display_spans([main.nodes[p] for p in chain], owners)
    branches.extend(branch_spans(main, chain, spans, owners))
    return spans


_NO_CONTENT = frozenset({b"", b"null", b"[]", b'""'})


def _blank(rec: _Meta | _Record) -> bool:
    """A message record with nothing to read (``"message":"error"``, no content), told
    from its structure: a later record with its uuid may take its place."""
    if rec.type in LEGACY_TOOL_TYPES:
        return False
    message = rec.message
    if isinstance(message, _MessageId):
        return len(message.content) <= 4 and bytes(message.content).strip() in _NO_CONTENT
    return not isinstance(message, _Message) or not message.content


def _readable(rec: _Meta | _Record, line: bytes) -> bool:
    """Whether a record (decoded whole from ``line`` if only its structure was) has
    something to index: asked only of one written again over a blank one."""
    try:
        whole = rec if isinstance(rec, _Record) else _decode_record(line)
    except (msgspec.DecodeError, RecursionError):
        return False
    return bool(documents([whole])[1])


def documents(
    records: list[_Record], names: dict[str, str] | None = None
) -> tuple[str, list[Document]]:
    """Role and documents of one display message built from its records.

    ``names`` maps tool_use ids to tool names; calls seen here are added to it.
    """
    first = records[0]
    if first.type == "tool_use":
        return "assistant", [tool_call_document(1, first.name, first.input)]
    if first.type == "tool_result":
        content = first.output if first.output is not None else first.content
        return "tool", [tool_result_document(0, None, block_text(content), bool(first.is_error))]
    parts = Parts(names)
    for rec in records:
        if isinstance(rec.message, _Message):
            parts.blocks(rec.message.content)
    if first.isMeta or first.isCompactSummary:
        return first.type or "", []  # injected context and compaction summaries
    if first.type == "user":
        parts.texts = [_typed(text) for text in parts.texts]
    return parts.build(first.type or "")


_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)


def _typed(text: str) -> str:
    """A slash command as the person typed it (``/review src``), not the markup Claude
    Code records it in (which became titles and snippets)."""
    if not text.lstrip().startswith("<command-"):
        return text
    name = _COMMAND.search(text)
    if name is None:
        return text
    args = _COMMAND_ARGS.search(text)
    return f"{name.group(1).strip()} {args.group(1).strip() if args else ''}".strip()


class _File:
    """What a message's session depends on in its file's name and place: worked out
    once per file read (and only when a record needs it, for a message loaded alone)."""

    __slots__ = ("stem", "in_subagents")

    def __init__(self, name: str) -> None:
        # Plain string work: a Path per loaded message was a measurable share of a search.
        folder, _, base = name.rpartition(os.sep)
        self.in_subagents = folder.rpartition(os.sep)[2] == "subagents"
        self.stem = _stem(base)


def _message(
    lines: list[_Record] | None,
    offset: int,
    length: int,
    index: int,
    names: dict[str, str] | None,
    file: _File | str,
) -> SourceMessage | None:
    """One display message from the records of the lines in its span.

    ``file`` is the file's ``_File``, or its name to make one from when needed.
    """
    if not lines or (lines[0].type not in MESSAGE_TYPES and lines[0].type not in LEGACY_TOOL_TYPES):
        return None
    first = lines[0]
    message_id = first.message.id if isinstance(first.message, _Message) else None
    records = [first]
    if message_id is not None:
        # Lines of one streamed API message share its id; others in the span are not it.
        records += [
            rec
            for rec in lines[1:]
            if rec.type == "assistant"
            and isinstance(rec.message, _Message)
            and rec.message.id == message_id
        ]
    role, docs = documents(records, names)
    message = SourceMessage(index, offset, length, role, parse_time(first.timestamp), docs)
    if not (first.isSidechain or first.sessionId):
        return message
    where = _File(file) if isinstance(file, str) else file
    if first.isSidechain and not where.in_subagents:
        # Sub-agent work inside its parent's file: its own (sub-agent) session.
        message.subagent = True
        message.session_id = f"{where.stem}:{first.agentId or SIDECHAIN}"
        message.title = "sub-agent (sidechain)"
    elif first.sessionId and first.sessionId != where.stem and not where.in_subagents:
        # A file holding several sessions (a resumed one carries the earlier
        # session's records): each message reports the session it belongs to. A
        # sub-agent's own file names its parent's session: it is its own session.
        message.session_id = first.sessionId
    return message


def _load(
    handle: BinaryIO,
    offset: int,
    length: int,
    index: int,
    names: dict[str, str] | None = None,
) -> SourceMessage | None:
    lines = records_at(handle, offset, length, _decode_record)
    return _message(lines, offset, length, index, names, str(handle.name))


def _stem(name: str) -> str:
    """A session file's name without ``.jsonl`` (its session id)."""
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else name.rpartition(".")[0] or name


class _UseLine(msgspec.Struct):
    message: ToolUses | str | None = None


_decode_uses = msgspec.json.Decoder(_UseLine).decode


def _tool_use_names(path: Path) -> dict[str, str]:
    """Tool names by tool_use id: only ids and names are decoded, never inputs or text."""
    names: dict[str, str] = {}
    for _, _, _, line in decoded_lines(path, ReadResult(0, 0), Budget.from_env(), _decode_uses):
        if isinstance(line.message, ToolUses):
            line.message.add_to(names)
    return names


def _in_run(message: SourceMessage, runs: dict[int, str]) -> SourceMessage:
    """A sidechain message that names no run gets its run's (``effective_spans``)."""
    sid = message.session_id
    if message.subagent and sid and sid.endswith(f":{SIDECHAIN}") and message.offset in runs:
        message.session_id = f"{sid[: -len(SIDECHAIN)]}{runs[message.offset]}"
    return message


def _sidechain_runs(path: Path) -> dict[int, str]:
    runs: dict[int, str] = {}
    effective_spans(path, ReadResult(0, 0), Budget.from_env(), [], runs=runs)
    return runs


class ClaudeCodeFormat(NamedResultsFormat):
    """Reader for Claude Code project transcripts; rebuilt on change (the leaf can move)."""

    name = NAME
    support = Support(
        agent="Claude Code",
        versions="1.0, 2.0, 2.1",
        where="`~/.claude/projects` (`$CLAUDE_CONFIG_DIR`), every OS",
        branches="the chain to the last record (rewinds, compaction kept)",
        subagents="`subagents/agent-*.jsonl` files and in-file sidechains, apart",
    )
    resume: str | None = "claude --resume {id}"
    # Starts the agent with a first prompt, for ``resume --in``:
    # `claude "query"`: interactive, with a first prompt.
    handoff: str | None = "claude {prompt}"
    append_only = False

    loader = staticmethod(_load)
    call_names = staticmethod(_tool_use_names)
    # Siblings under one parent are forks (a rewind); a writer that never forks says
    # so (``effective_spans``'s ``linear``).
    linear = False

    def __init__(self) -> None:
        super().__init__()
        self._runs = FileMemo(_sidechain_runs)

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        return self._messages(path, result, budget, None)

    def read_with_branches(
        self, path: Path, result: ReadResult, budget: Budget
    ) -> tuple[list[SourceMessage], list[SourceBranch]]:
        """The messages of :meth:`read`, and the turns a rewind or an edit left behind,
        from the same pass over the file."""
        branches: list[SourceBranch] = []
        return list(self._messages(path, result, budget, branches)), branches

    def _messages(
        self,
        path: Path,
        result: ReadResult,
        budget: Budget,
        branches: list[SourceBranch] | None,
    ) -> Iterator[SourceMessage]:
        size = os.stat(path).st_size
        budget.check(path, "log", size)
        sidechains: list[tuple[int, int]] = []
        runs: dict[int, str] = {}
        kept: KeptRecords[_Record] | None = KeptRecords() if keeps_records(size, budget) else None
        found: list[Branch] | None = None if branches is None else []
        spans = effective_spans(path, result, budget, sidechains, kept, self.linear, runs, found)
        names: dict[str, str] = {}  # filled in order: a call precedes its result
        file = _File(str(path))
        with open_source(path) as handle:

            def load(_: BinaryIO, offset: int, length: int, index: int) -> SourceMessage | None:
                lines: list[_Record] | None
                if kept is not None:
                    lines = kept.within(offset, length)
                else:
                    lines = records_at(handle, offset, length, _decode_record)
                return _message(lines, offset, length, index, names, file)

            yield from messages_at(handle, spans, result, load)
            # Sidechain messages follow the main transcript's display indexes.
            for message in messages_at(handle, sidechains, result, load):
                yield _in_run(message, runs)
            # Abandoned branches, when asked, follow them (indexes of their own).
            for after, branch in found or ():
                messages = list(messages_at(handle, branch, result, load))
                assert branches is not None
                branches.append(SourceBranch(after, messages))

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        message = super().load(path, offset, length, index)
        if message is not None and message.session_id and message.session_id.endswith(SIDECHAIN):
            message = _in_run(message, self._runs.of(path))
        return message

    def resume_id(self, session_id: str) -> str | None:
        """A sidechain run resumes as the session it ran in; a sub-agent's own file
        (``agent-<id>``) cannot be resumed."""
        if session_id.startswith("agent-"):
            return None
        return session_id.split(":", 1)[0]

    def info(self, path: Path) -> SessionInfo:
        stem = _stem(path.name)
        subagent = path.parent.name == "subagents"
        info = SessionInfo(session_id=stem, subagent=subagent)
        try:
            with open(path, "rb") as handle:
                scan_info(info, line_blocks(handle, INFO_SCAN_BYTES))
        except OSError:
            pass
        else:
            # A main transcript's title is its file's; a sub-agent's without one of
            # its own comes from its meta sidecar, which the catalog does not follow.
            info.title_located = info.title_span is not None or not subagent
        if subagent:
            info.parent_id = path.parent.parent.name or None
            sub = session_log._read_json(path.with_suffix(".meta.json"), _decode_submeta)
            if sub is not None and info.title is None:
                info.title = sub.description or sub.agentType
        return info

    def title_at(self, path: Path, offset: int, length: int) -> str | None:
        """The title of the summary or custom-title record at ``offset``."""
        line = read_span(path, offset, length)
        if line is None:
            return None  # the file no longer holds the record
        return title_of(line, offset, length)


FORMAT = ClaudeCodeFormat()
