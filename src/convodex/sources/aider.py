"""Aider: ``.aider.chat.history.md`` in the directory aider ran in (every OS).

Append-only Markdown. Each run opens with ``# aider chat started at <local time>``
and is a session of its own. Inside a run: ``#### `` lines are the person's prompt
(consecutive ones are one prompt), ``> `` lines are aider's own output (command line,
banner, ``Applied edit to …``, ``Commit <sha> <message>``, token and cost lines,
errors), and everything else is the assistant's reply. A reply's SEARCH/REPLACE
blocks are its edits: each is a ``tool_input`` (tool ``edit``: the file name and the
block), and the rest of the reply is assistant text. In aider's output, a commit is
a ``tool_input`` (tool ``git``), a line that reads as an error a ``tool_error``, and
the rest ``tool_output``. There are no branches: ``/undo`` and ``/clear`` are only
recorded as text, and nothing before them is removed.

The history records no ids and no per-message times. A session's id is the run's
start time and a digest of the file's path; its title is its first prompt. The
prompt log beside it, ``.aider.input.history`` (``# <time>`` then ``+<line>`` per
entry), repeats every prompt with the time it was typed: it dates the prompts it
matches (in order), and each reply and output takes the time of the prompt it follows
(else the run's start). The prompts only it holds (the history lost or cleared) are
a session of their own, read from the prompt log, which is a source only then.

A file holds many sessions (each message names its own) and is rebuilt on change:
the last reply of a run is still being written while aider runs.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from convodex.sources.base import (
    Budget,
    FileMemo,
    FileStat,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
    file_stamp,
    read_span,
    regular,
)
from convodex.text.documents import (
    Document,
    tool_call_document,
    tool_result_document,
)
from convodex.text.titles import user_text_title

NAME = "aider"
HISTORY = ".aider.chat.history.md"
INPUT_HISTORY = ".aider.input.history"
_HEADER = re.compile(rb"# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
_COMMIT = re.compile(r"Commit ([0-9a-f]{7,40}) (.+)")
_ERROR = re.compile(r"(?i)(?:\w+ )?error\b")
_SEARCH = re.compile(r"<{5,9} SEARCH\s*")
_REPLACE = re.compile(r">{5,9} REPLACE\s*")
_FENCE = re.compile(r"(?:```|~~~|<source>)\S*\s*")
_FENCE_END = re.compile(r"(?:```|~~~|</source>)\s*")
# Directories in a tree of projects that never hold a history of their own.
_NOT_PROJECTS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".cache"}
)


@dataclass(slots=True)
class _Block:
    kind: str  # "user", "tool" or "assistant"
    offset: int
    end: int  # after its last non-blank line


@dataclass(slots=True)
class _Session:
    id: str
    offset: int
    started: int | None
    blocks: list[_Block] = field(default_factory=list)
    title: str | None = None


@dataclass(slots=True)
class _Table:
    """A history's sessions by offset and its prompts' times, for search-time loads."""

    starts: list[int]
    sessions: list[_Session]
    times: dict[int, int]


def _kind(line: bytes) -> str | None:
    """A line's block kind; ``None`` for a blank line."""
    if line.startswith(b"####") and line[4:5] in (b" ", b"\n", b"\r", b""):
        return "user"
    if line.startswith(b">") and line[1:2] in (b" ", b"\n", b"\r", b""):
        return "tool"
    return "assistant" if line.strip() else None


def _local_ms(text: str) -> int | None:
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        return None


def _session_id(path: Path, started: str | None) -> str:
    digest = hashlib.blake2b(os.fsencode(path.absolute()), digest_size=4).hexdigest()
    if started is None:
        return f"aider-{digest}"
    return f"aider-{started.replace('-', '').replace(':', '').replace(' ', 'T')}-{digest}"


def sessions(buf: bytes, path: Path) -> list[_Session]:
    """The runs of a history and their blocks, by byte span."""
    found: list[_Session] = []
    current: _Session | None = None
    block: _Block | None = None
    offset = 0
    for line in buf.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        header = _HEADER.match(line)
        if header is not None:
            stamp = header.group(1).decode()
            current = _Session(_session_id(path, stamp), start, _local_ms(stamp))
            found.append(current)
            block = None
            continue
        kind = _kind(line)
        if kind is None:
            if block is not None and block.kind != "assistant":
                block = None  # a blank line ends a prompt or an output block
            continue
        if current is None:  # text before any header: a run without its header
            current = _Session(_session_id(path, None), start, None)
            found.append(current)
        if block is None or block.kind != kind:
            block = _Block(kind, start, offset)
            current.blocks.append(block)
        block.end = offset
    return found


def _lines(raw: bytes, prefix: int) -> list[str]:
    text = raw.decode("utf-8", "replace")
    return [line[prefix:].rstrip() for line in text.splitlines()]


def _prompt(raw: bytes) -> str:
    """A prompt's text: its lines without the ``#### `` mark and aider's hard breaks."""
    lines = raw.decode("utf-8", "replace").splitlines()
    return "\n".join(
        line[5:].rstrip() if line.startswith("#### ") else "" for line in lines
    ).strip()


def _comparable(text: str) -> str:
    return "\n".join(line.strip() for line in text.splitlines()).strip()


def _output_documents(lines: list[str]) -> list[Document]:
    """Aider's own lines: commits as calls, errors alone, the rest joined as output."""
    docs: list[Document] = []
    run: list[str] = []

    def flush() -> None:
        text = "\n".join(run).strip()
        if text:
            docs.append(tool_result_document(len(docs), NAME, text))
        run.clear()

    for line in lines:
        commit = _COMMIT.fullmatch(line.strip())
        if commit is not None:
            flush()
            docs.append(tool_call_document(len(docs), "git", f"commit {commit[1]} {commit[2]}"))
        elif _ERROR.match(line.strip()):
            flush()
            docs.append(tool_result_document(len(docs), NAME, line.strip(), True))
        else:
            run.append(line)
    flush()
    return docs


def _reply_documents(lines: list[str]) -> list[Document]:
    """A reply: its SEARCH/REPLACE edits as calls, the rest as assistant text."""
    prose: list[str] = []
    edits: list[str] = []
    i = 0
    while i < len(lines):
        if not _SEARCH.fullmatch(lines[i]):
            prose.append(lines[i])
            i += 1
            continue
        if prose and _FENCE.fullmatch(prose[-1]):
            prose.pop()
        file = prose.pop() if prose and prose[-1].strip() else ""
        end = next(
            (j for j in range(i, len(lines)) if _REPLACE.fullmatch(lines[j])), len(lines) - 1
        )
        edits.append("\n".join([file, *lines[i : end + 1]]).strip())
        i = end + 1
        if i < len(lines) and _FENCE_END.fullmatch(lines[i]):
            i += 1
    text = "\n".join(prose).strip()
    docs = [Document(0, "assistant_text", text)] if text else []
    docs.extend(tool_call_document(n, "edit", edit) for n, edit in enumerate(edits, 1))
    return docs


def block_message(raw: bytes, offset: int, index: int) -> SourceMessage:
    """One prompt, output block or reply, told apart by its first line."""
    kind = _kind(raw.split(b"\n", 1)[0]) or "assistant"
    if kind == "user":
        text = _prompt(raw)
        docs = [Document(0, "user_text", text)] if text else []
        return SourceMessage(index, offset, len(raw), "user", None, docs)
    if kind == "tool":
        docs = _output_documents(_lines(raw, 2))
    else:
        docs = _reply_documents(_lines(raw, 0))
    return SourceMessage(index, offset, len(raw), kind, None, docs)


@dataclass(slots=True)
class _Entry:
    """One prompt of the prompt log: where it is, when it was typed, what it says."""

    offset: int
    end: int
    ms: int
    text: str


def _entries(buf: bytes) -> list[_Entry]:
    """The prompt log's entries (``# <time>`` then ``+<line>`` each), by byte span."""
    found: list[_Entry] = []
    lines: list[str] = []
    offset = 0
    for line in buf.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        if line.startswith(b"# "):
            ms = _local_ms(line[2:].decode("utf-8", "replace").strip())
            if ms is not None:
                lines = []
                found.append(_Entry(start, offset, ms, ""))
            continue
        if line.startswith(b"+") and found and found[-1].end == start:
            lines.append(line[1:].decode("utf-8", "replace").rstrip("\r\n"))
            found[-1].end, found[-1].text = offset, _comparable("\n".join(lines))
    return [entry for entry in found if entry.text]


def _input_entries(path: Path) -> list[_Entry]:
    """The entries of the prompt log beside a history."""
    try:
        return _entries((path.parent / INPUT_HISTORY).read_bytes())
    except OSError:
        return []


def _matched(
    buf: bytes, found: list[_Session], entries: list[_Entry]
) -> tuple[dict[int, int], set[int]]:
    """Each message's time by offset (a prompt's from the prompt log, in order), and
    the prompt-log entries the history holds. Two runs in one folder at once put their
    prompts in the log interleaved and in the history one run after the other: a
    prompt not found just ahead is paired with the earliest unpaired entry of the
    same text anywhere, so it is neither lost from the history nor doubled in the
    prompt log's own session."""
    times: dict[int, int] = {}
    matched: set[int] = set()
    by_text: dict[str, list[int]] = {}
    for n, entry in enumerate(entries):
        by_text.setdefault(entry.text, []).append(n)
    cursor = 0
    for session in found:
        latest = session.started
        for block in session.blocks:
            if block.kind == "user":
                prompt = _comparable(_prompt(buf[block.offset : block.end]))
                ahead = entries[cursor : cursor + 64]  # a prompt log can miss lines
                match = next(
                    (
                        n
                        for n, e in enumerate(ahead)
                        if e.text == prompt and cursor + n not in matched
                    ),
                    None,
                )
                if match is not None:
                    latest = ahead[match].ms
                    matched.add(cursor + match)
                    cursor += match + 1
                else:
                    elsewhere = next((n for n in by_text.get(prompt, ()) if n not in matched), None)
                    if elsewhere is not None:
                        latest = entries[elsewhere].ms
                        matched.add(elsewhere)
            if latest is not None:
                times[block.offset] = latest
    return times, matched


def table_of(buf: bytes, path: Path) -> _Table:
    found = sessions(buf, path)
    _title(buf, found)
    times, _ = _matched(buf, found, _input_entries(path))
    return _Table([s.offset for s in found], found, times)


def _table(path: Path) -> _Table:
    return table_of(path.read_bytes(), path)


def _title(buf: bytes, found: list[_Session]) -> None:
    for session in found:
        first = next((b for b in session.blocks if b.kind == "user"), None)
        text = _prompt(buf[first.offset : first.end]) if first is not None else ""
        session.title = user_text_title(text)  # the rule of every session without one


def _stamp(path: Path) -> Hashable:
    try:
        beside = file_stamp(path.parent / INPUT_HISTORY)
    except OSError:
        beside = None
    return (file_stamp(path), beside)


_TABLES = FileMemo(_table, keep=8, stamp=_stamp)


@dataclass(slots=True)
class _PromptLog:
    """The prompts only the prompt log holds (the history lost, cleared or never
    written), as one session."""

    id: str
    entries: list[_Entry]
    title: str | None


def prompt_log(path: Path) -> _PromptLog:
    entries = _entries(path.read_bytes())
    history = path.parent / HISTORY
    try:
        buf = history.read_bytes()
    except OSError:
        buf = b""
    _, matched = _matched(buf, sessions(buf, history), entries)
    kept = [e for n, e in enumerate(entries) if n not in matched]
    digest = hashlib.blake2b(os.fsencode(path.absolute()), digest_size=4).hexdigest()
    title = user_text_title(kept[0].text) if kept else None
    return _PromptLog(f"aider-prompts-{digest}", kept, title)


def _log_stamp(path: Path) -> Hashable:
    try:
        beside = file_stamp(path.parent / HISTORY)
    except OSError:
        beside = None
    return (file_stamp(path), beside)


_PROMPT_LOGS = FileMemo(prompt_log, keep=8, stamp=_log_stamp)


def _entry_message(entry: _Entry, index: int, log: _PromptLog) -> SourceMessage:
    doc = Document(0, "user_text", entry.text)
    message = SourceMessage(index, entry.offset, entry.end - entry.offset, "user", entry.ms, [doc])
    message.session_id, message.title = log.id, log.title
    return message


def _both_stat(path: Path, other: Path, known: os.stat_result | None) -> FileStat:
    """A file and the one beside it that changes what it shows, as one fingerprint."""
    own = FileStat.of_result(regular(known, path)) if known else FileStat.of(path)
    try:
        st = os.stat(other)
    except OSError:
        return own
    return FileStat(own.size + st.st_size, max(own.mtime_ns, st.st_mtime_ns), own.inode)


class AiderFormat(SourceFormat):
    """Reader for Aider chat histories: one session per run; rebuilt on change."""

    name = NAME
    support = Support(
        agent="Aider",
        versions="0.x chat histories",
        where=(
            "workspace directories other agents' sessions name, `--root DIR:aider`, "
            "`roots` in the config file"
        ),
        branches="one session per run",
        subagents="—",
    )
    append_only = False
    # No session ids: aider reloads the directory's history into a new run.
    resume: str | None = "aider --restore-chat-history"
    source_names = frozenset({HISTORY, INPUT_HISTORY})

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        if path.name == INPUT_HISTORY:
            log = prompt_log(path)
            result.end_offset = result.bytes_read = os.stat(path).st_size
            for entry in log.entries:
                yield _entry_message(entry, result.next_index, log)
                result.next_index += 1
            return
        buf = path.read_bytes()
        table = table_of(buf, path)
        result.end_offset = result.bytes_read = len(buf)
        for session in table.sessions:
            for block in session.blocks:
                budget.check(path, "record", block.end - block.offset)
                raw = buf[block.offset : block.end]
                message = self._message(raw, block.offset, result.next_index, table)
                result.next_index += 1
                yield message

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        if path.name == INPUT_HISTORY:
            log = _PROMPT_LOGS.of(path)
            entry = next((e for e in log.entries if e.offset == offset), None)
            return None if entry is None else _entry_message(entry, index, log)
        raw = read_span(path, offset, length)
        return None if raw is None else self._message(raw, offset, index, _TABLES.of(path))

    @staticmethod
    def _message(raw: bytes, offset: int, index: int, table: _Table) -> SourceMessage:
        message = block_message(raw, offset, index)
        n = bisect.bisect_right(table.starts, offset) - 1
        if n >= 0:
            session = table.sessions[n]
            message.session_id, message.title = session.id, session.title
        message.created_at = table.times.get(offset)
        return message

    def info(self, path: Path) -> SessionInfo:
        if path.name == INPUT_HISTORY:
            return SessionInfo(session_id=_PROMPT_LOGS.of(path).id, workspace_root=str(path.parent))
        return SessionInfo(session_id=_session_id(path, None), workspace_root=str(path.parent))

    def claims(self, path: Path, fixed: bool) -> bool:
        """The chat history; its prompt log only while it holds prompts the history
        does not (else it would list as an empty session)."""
        if path.name == INPUT_HISTORY:
            try:
                return bool(_PROMPT_LOGS.of(path).entries)
            except OSError:
                return False
        return path.name == HISTORY

    def stat(self, path: Path, known: os.stat_result | None = None) -> FileStat:
        """The history and its prompt log together: each changes what the other shows
        (the log dates the history's prompts; the history decides what only the log
        holds)."""
        other = INPUT_HISTORY if path.name == HISTORY else HISTORY
        return _both_stat(path, path.parent / other, known)

    def skip_dirs(self, names: frozenset[str], fixed: bool) -> frozenset[str]:
        return names & _NOT_PROJECTS if fixed else frozenset()


FORMAT = AiderFormat()
