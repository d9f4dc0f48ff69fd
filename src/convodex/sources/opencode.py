"""OpenCode sessions, in both of its layouts (``$XDG_DATA_HOME/opencode``).

**SQLite** (v1.2 and later): ``opencode.db`` with tables ``session`` (``id``,
``title``, ``directory``, ``parent_id``, ``revert`` JSON, times), ``message``
(``id``, ``session_id``, ``time_created``, ``data`` JSON: the message info) and
``part`` (``id``, ``message_id``, ``session_id``, ``data`` JSON: the part). The
database is one source holding every session: each message names its session, and
the locator of a message is its row id. It is read through ``sqlitedb`` (read-only,
short queries) and rebuilt whenever the database or its ``-wal`` changes.

**JSON tree** (before v1.2): ``storage/session/<project>/<session>.json``, one file
a message in ``storage/message/<session id>/`` and a part in
``storage/part/<message id>/`` (very old trees keep every part flat in ``part/``,
naming its ``messageID``). A session file is a source; its fingerprint covers its
message and part files, and a message's locator is its position among the message
files. A tree beside an ``opencode.db`` was migrated into it and is not read.

Both layouts hold the same objects, read by one function. OpenCode's own rules
decide the effective branch: messages are in id order; a session's ``revert``
hides the message it names and every later one (the TUI shows none of them and the
next prompt deletes them); ``--fork`` copies the messages before the fork point into
a new, independent session, indexed as such. A session with a ``parent_id`` is a
sub-agent (task tool) session. Text parts are user or assistant text (synthetic and
ignored parts are not shown, so not indexed); a ``tool`` part is a ``tool_input``
and, once completed or failed, a ``tool_output`` / ``tool_error`` (a failed state, or
a nonzero ``metadata.exit``); a ``subtask`` part is a ``tool_input``. Reasoning,
files, patches, snapshots and step markers are not indexed, nor is an assistant
compaction summary (``summary: true``).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from convodex.errors import SourceError
from convodex.sources import drift, sqlitedb
from convodex.sources.base import (
    LOCATOR_CHECKPOINT,
    Budget,
    FileMemo,
    FileStat,
    LineError,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
)
from convodex.sources.claude_info import parse_time
from convodex.sources.jsonl import error_class
from convodex.sqlite import sqlite3
from convodex.text.documents import (
    Document,
    arguments_text,
    tool_call_document,
    tool_result_document,
)

T = TypeVar("T")
NAME = "opencode"
DATABASE = "opencode.db"
# OpenCode's placeholder titles, replaced once it has named the session.
_DEFAULT_TITLE = re.compile(
    r"^(?:New session|Child session) - \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"
)
# The message roles and part types OpenCode writes (its ``MessageV2``): any other is
# format drift (``drift``), and a part's ``text`` is kept.
ROLES = frozenset({"user", "assistant"})
PART_TYPES = frozenset(
    {"text", "reasoning", "tool", "file", "subtask", "agent", "snapshot", "patch", "retry"}
    | {"step-start", "step-finish", "compaction"}
)
# What an OpenCode data directory holds besides its sessions (never sources).
_DATA_DIRS = frozenset({"snapshot", "log", "bin", "tool-output", "worktree"})


class _Time(msgspec.Struct):
    created: int | float | str | None = None
    updated: int | float | str | None = None


class _Revert(msgspec.Struct):
    messageID: str | None = None


class _Session(msgspec.Struct):
    id: str | None = None
    title: str | None = None
    directory: str | None = None
    parentID: str | None = None
    revert: _Revert | None = None
    time: _Time | None = None


class _Info(msgspec.Struct):
    """A message's info; in the database ``id`` is the row's, not in ``data``."""

    id: str | None = None
    role: str | None = None
    time: _Time | None = None
    summary: Any = None  # ``true`` on an assistant compaction summary


class _State(msgspec.Struct):
    status: str | None = None
    input: Any = None
    output: Any = None
    error: Any = None
    metadata: Any = None


class _Part(msgspec.Struct):
    messageID: str | None = None
    type: str | None = None
    text: Any = None
    synthetic: bool | None = None
    ignored: bool | None = None
    tool: str | None = None
    state: _State | None = None
    prompt: str | None = None
    description: str | None = None
    agent: str | None = None


class _PartOwner(msgspec.Struct):
    messageID: str | None = None


_decode_session = msgspec.json.Decoder(_Session).decode
_decode_info = msgspec.json.Decoder(_Info).decode
_decode_part = msgspec.json.Decoder(_Part).decode
_decode_owner = msgspec.json.Decoder(_PartOwner).decode
_decode_revert = msgspec.json.Decoder(_Revert).decode


def _ms(value: int | float | str | None) -> int | None:
    """Epoch milliseconds; some writers store an ISO 8601 string instead."""
    if isinstance(value, str):
        return parse_time(value)
    return int(value) if value is not None else None


def _title(title: str | None) -> str | None:
    return None if not title or _DEFAULT_TITLE.match(title) else title


def _failed_exit(metadata: Any) -> bool:
    exit_code = metadata.get("exit") if isinstance(metadata, dict) else None
    return isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0


def _tool_documents(first: int, part: _Part) -> list[Document]:
    state = part.state or _State()
    docs: list[Document] = []
    if state.input not in (None, "", {}):
        docs.append(tool_call_document(first, part.tool, state.input))
    if state.status in ("completed", "success") and state.output is not None:
        output = arguments_text(state.output)
        docs.append(
            tool_result_document(first + len(docs), part.tool, output, _failed_exit(state.metadata))
        )
    elif state.status == "error":
        error = arguments_text(state.error)
        docs.append(tool_result_document(first + len(docs), part.tool, error, True))
    return docs


def documents(info: _Info, parts: list[_Part]) -> tuple[str, list[Document]]:
    """Role and documents of one message from its info and its parts, in order."""
    role = info.role or ""
    if role and role not in ROLES:
        drift.note(drift.RECORD, role)  # a new kind of message: its text is kept
    if not role or (role == "assistant" and info.summary is True):
        return role, []
    texts: list[str] = []
    docs: list[Document] = []
    for part in parts:
        if part.type == "text":
            if isinstance(part.text, str) and not part.synthetic and not part.ignored:
                texts.append(part.text)
        elif part.type == "tool":
            docs.extend(_tool_documents(len(docs) + 1, part))
        elif part.type == "subtask" and part.prompt:
            task = {"agent": part.agent, "description": part.description, "prompt": part.prompt}
            docs.append(tool_call_document(len(docs) + 1, "subtask", task))
        elif part.type not in PART_TYPES:
            drift.note(drift.BLOCK, part.type)
            if isinstance(part.text, str):
                texts.append(part.text)
    text = "\n".join(texts)
    if text.strip():
        docs.insert(0, Document(0, "user_text" if role == "user" else "assistant_text", text))
    return role, docs


def effective(ids: Sequence[str | None], revert: _Revert | None) -> int:
    """How many messages, in id order, are on the effective branch.

    A revert hides the message it names and everything after it; a revert whose
    message is gone hides the messages whose ids sort at or after it (OpenCode's TUI).
    """
    target = revert.messageID if revert is not None else None
    if not target:
        return len(ids)
    if target in ids:
        return ids.index(target)
    return next((n for n, mid in enumerate(ids) if mid is not None and mid >= target), len(ids))


def _decode(
    raw: bytes | str, decode: Callable[[bytes | str], T], errors: list[LineError], at: int
) -> T | None:
    try:
        return decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        errors.append(LineError(at, error_class(exc)))
        return None


# -- the JSON tree -------------------------------------------------------------------


def _storage(session_file: Path) -> Path:
    """``storage/`` from ``storage/session/<project>/<session>.json``."""
    return session_file.parent.parent.parent


def _json_files(directory: Path) -> list[Path]:
    try:
        entries = [e for e in os.scandir(directory) if e.name.endswith(".json") and e.is_file()]
    except OSError:
        return []
    return [Path(e.path) for e in sorted(entries, key=lambda e: e.name)]


def _flat_parts(part_dir: Path) -> dict[str, list[Path]]:
    """Very old trees: every part directly in ``part/``, grouped by its ``messageID``."""
    owners: dict[str, list[Path]] = {}
    for file in _json_files(part_dir):
        try:
            owner = _decode_owner(file.read_bytes()).messageID
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        if owner:
            owners.setdefault(owner, []).append(file)
    return owners


_FLAT_PARTS = FileMemo(_flat_parts, keep=4)


def _part_files(storage: Path, message_id: str) -> list[Path]:
    nested = storage / "part" / message_id
    if nested.is_dir():
        return _json_files(nested)
    flat = storage / "part"
    return _FLAT_PARTS.of(flat).get(message_id, []) if flat.is_dir() else []


@dataclass(slots=True)
class _TreeMessage:
    """A message file, its info decoded once (``None`` when it does not decode)."""

    file: Path
    size: int
    info: _Info | None

    @property
    def id(self) -> str:
        return (self.info.id if self.info else None) or self.file.stem


@dataclass(slots=True)
class _TreeSession:
    file: Path
    session: _Session
    messages: list[_TreeMessage]

    @property
    def storage(self) -> Path:
        return _storage(self.file)

    def effective(self) -> int:
        return effective([m.id for m in self.messages], self.session.revert)


def _tree_session(path: Path, errors: list[LineError], budget: Budget) -> _TreeSession:
    """A session file and its messages' infos, in OpenCode's (file name) order."""
    try:
        session = _decode_session(path.read_bytes())
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        raise SourceError(str(path), "not an OpenCode session file") from exc
    messages = []
    for position, file in enumerate(
        _json_files(_storage(path) / "message" / (session.id or path.stem))
    ):
        raw = file.read_bytes()
        budget.check(file, "record", len(raw))
        messages.append(_TreeMessage(file, len(raw), _decode(raw, _decode_info, errors, position)))
    return _TreeSession(path, session, messages)


def _tree_message(
    tree: _TreeSession, position: int, index: int, errors: list[LineError], budget: Budget
) -> SourceMessage | None:
    message = tree.messages[position]
    if message.info is None:
        return None
    parts: list[_Part] = []
    size = message.size
    for part_file in _part_files(tree.storage, message.id):
        data = part_file.read_bytes()
        budget.check(part_file, "record", len(data))
        size += len(data)
        part = _decode(data, _decode_part, errors, position)
        if part is not None:
            parts.append(part)
    role, docs = documents(message.info, parts)
    created = _ms(message.info.time.created) if message.info.time else None
    return SourceMessage(index, position, size, role, created, docs)


def _json_stats(directory: Path) -> list[tuple[str, os.stat_result]]:
    """(name, stat) of the ``.json`` files of a directory; a missing one raises."""
    with os.scandir(directory) as entries:
        return [(e.name, e.stat()) for e in entries if e.name.endswith(".json")]


def _tree_stat(path: Path) -> FileStat:
    """The session file, its message files and their parts: sizes summed, newest mtime.

    Only directory listings and stats, no reads: a message's parts are under its file
    name (OpenCode names each file after its id). A scan pays this for every session
    of a tree, so it stays on ``os.scandir``.
    """
    st = os.stat(path)
    size, mtime = st.st_size, st.st_mtime_ns
    try:
        session_id = _decode_session(path.read_bytes()).id or path.stem
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return FileStat(size, mtime, st.st_ino)  # reading it will say what is wrong
    storage = _storage(path)
    try:
        messages = _json_stats(storage / "message" / session_id)
    except OSError:
        messages = []
    stats = [fst for _, fst in messages]
    for name, _ in messages:
        try:
            stats.extend(fst for _, fst in _json_stats(storage / "part" / name[:-5]))
        except OSError:  # no part directory: a very old tree keeps parts flat
            for file in _part_files(storage, name[:-5]):
                with contextlib.suppress(OSError):
                    stats.append(os.stat(file))
    for fst in stats:
        size += fst.st_size
        mtime = max(mtime, fst.st_mtime_ns)
    return FileStat(size, mtime, st.st_ino)


# -- the database --------------------------------------------------------------------

_SESSIONS = "SELECT * FROM session ORDER BY time_created, id"
_MESSAGES = "SELECT rowid, id, data FROM message WHERE session_id = ? ORDER BY time_created, id"
_PARTS = "SELECT data FROM part WHERE message_id = ? ORDER BY id"


@dataclass(slots=True)
class _DbSession:
    id: str
    title: str | None
    subagent: bool
    revert: _Revert | None

    @classmethod
    def of(cls, row: sqlite3.Row) -> _DbSession:
        raw = sqlitedb.column(row, "revert")
        try:
            revert = _decode_revert(raw) if raw else None
        except msgspec.DecodeError:
            revert = None  # a revert we cannot read hides nothing
        parent = sqlitedb.column(row, "parent_id")
        return cls(str(row["id"]), _title(sqlitedb.column(row, "title")), bool(parent), revert)


def _db_message(
    db: sqlite3.Connection,
    session: _DbSession,
    row: sqlite3.Row,
    index: int,
    errors: list[LineError],
    budget: Budget,
    path: Path,
) -> SourceMessage:
    rowid, data = int(row["rowid"]), row["data"]
    budget.check(path, "record", len(data))
    info = _decode(data, _decode_info, errors, rowid) or _Info()
    parts: list[_Part] = []
    size = len(data)
    for part_row in sqlitedb.rows(db, _PARTS, (row["id"],)):
        raw = part_row["data"]
        budget.check(path, "record", len(raw))
        size += len(raw)
        part = _decode(raw, _decode_part, errors, rowid)
        if part is not None:
            parts.append(part)
    role, docs = documents(info, parts)
    created = _ms(info.time.created) if info.time else None
    message = SourceMessage(index, rowid, size, role, created, docs)
    message.session_id = session.id
    message.title = session.title
    message.subagent = session.subagent
    return message


def _read_db(path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
    with sqlitedb.reading(path) as db:
        for session_row in sqlitedb.rows(db, _SESSIONS):
            session = _DbSession.of(session_row)
            messages = sqlitedb.rows(db, _MESSAGES, (session.id,))
            kept = effective([str(m["id"]) for m in messages], session.revert)
            for row in messages[:kept]:
                message = _db_message(
                    db, session, row, result.next_index, result.errors, budget, path
                )
                result.bytes_read += message.length
                result.next_index += 1
                yield message


def _load_db(path: Path, rowid: int, index: int) -> SourceMessage | None:
    with sqlitedb.reading(path) as db:
        found = sqlitedb.rows(
            db, "SELECT rowid, id, session_id, data FROM message WHERE rowid = ?", (rowid,)
        )
        if not found:
            return None
        row = found[0]
        sessions = sqlitedb.rows(db, "SELECT * FROM session WHERE id = ?", (row["session_id"],))
        if not sessions:
            return None
        session = _DbSession.of(sessions[0])
        if session.revert is not None:
            ids = [str(m["id"]) for m in sqlitedb.rows(db, _MESSAGES, (session.id,))]
            if ids.index(str(row["id"])) >= effective(ids, session.revert):
                return None  # reverted since it was indexed
        return _db_message(db, session, row, index, [], Budget.from_env(), path)


# -- the format ----------------------------------------------------------------------


class OpenCodeFormat(SourceFormat):
    """Reader for OpenCode's database and JSON tree; rebuilt on any change."""

    name = NAME
    support = Support(
        agent="OpenCode",
        versions="JSON tree 0.x, `opencode.db`",
        where="`$XDG_DATA_HOME/opencode` (`~/.local/share/opencode`, macOS too)",
        branches="reverts hide later messages",
        subagents="child sessions (`parentID`)",
    )
    append_only = False
    resume: str | None = "opencode --session {id}"
    # Starts the agent with a first prompt, for ``resume --in``:
    # `--prompt`: the TUI with a first prompt.
    handoff: str | None = "opencode --prompt {prompt}"
    source_names = frozenset({DATABASE})
    source_dirs = frozenset({"session"})

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        result.end_offset = LOCATOR_CHECKPOINT
        if path.name.endswith(".db"):
            yield from _read_db(path, result, budget)
            return
        tree = _tree_session(path, result.errors, budget)
        for position in range(tree.effective()):
            message = _tree_message(tree, position, result.next_index, result.errors, budget)
            if message is None:
                continue
            result.bytes_read += message.length
            result.next_index += 1
            yield message

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        if path.name.endswith(".db"):
            try:
                return _load_db(path, offset, index)
            except SourceError:
                return None
        try:
            budget = Budget.from_env()
            tree = _tree_session(path, [], budget)
            if offset >= tree.effective():
                return None  # gone, or reverted since it was indexed
            return _tree_message(tree, offset, index, [], budget)
        except SourceError:
            return None

    def info(self, path: Path) -> SessionInfo:
        if path.name.endswith(".db"):
            return SessionInfo(session_id=NAME)  # its messages name their own sessions
        try:
            session = _decode_session(path.read_bytes())
        except (OSError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return SessionInfo(session_id=path.stem)
        time = session.time or _Time()
        return SessionInfo(
            session_id=session.id or path.stem,
            title=_title(session.title),
            workspace_root=session.directory or None,
            parent_id=session.parentID,
            subagent=bool(session.parentID),
            created_at=_ms(time.created),
            updated_at=_ms(time.updated),
        )

    def stat(self, path: Path, known: os.stat_result | None = None) -> FileStat:
        if path.name.endswith(".db"):
            return sqlitedb.stat(path)
        return _tree_stat(path)

    def claims(self, path: Path, fixed: bool) -> bool:
        if path.name == DATABASE:
            return True
        if not path.name.endswith(".json") or path.parent.parent.name != "session":
            return False
        return fixed or (_storage(path) / "message").is_dir()

    def skip_dirs(self, names: frozenset[str], fixed: bool) -> frozenset[str]:
        if {"session", "message", "part"} <= names:
            return names - {"session"}  # a storage tree: sessions list their own files
        if DATABASE in names:  # the data directory; its storage tree was migrated
            return names if fixed else names & (_DATA_DIRS | {"storage"})
        if fixed and "storage" in names:
            return names - {"storage"}
        return frozenset()


FORMAT = OpenCodeFormat()
