"""The Cursor editor's chats (Composer / Agent): ``<user dir>/globalStorage/state.vscdb``.

The global ``state.vscdb`` is SQLite with a key-value table ``cursorDiskKV``:
``composerData:<composer id>`` holds a conversation (``name``, ``createdAt``, and
``fullConversationHeadersOnly``: its bubbles in order), each bubble is
``bubbleId:<composer id>:<bubble id>`` (``type`` 1 user, 2 assistant; ``text``;
``toolFormerData`` for a tool call: ``name``, ``rawArgs``/``params``, ``result``,
``status``; ``thinking``, never indexed). Older composers inline their bubbles in
a ``conversation`` array instead. The database is one source holding every
composer; each message names its composer as its session.

Branches: editing an earlier message rewrites the header list; bubbles no longer
listed stay in the table but are not the conversation and are not indexed.

Cursor has the database open and writes it often (UI state, checkpoints), so it is
read through ``sqlitedb`` (read-only, short queries). A message's locator is its
row id shifted left by 20 bits, plus 1 + its position for a bubble inlined in its
composer. Changes are found by a fingerprint of the key-value table (composer count
and highest row id), taken only when the file or its ``-wal`` changed: Cursor
writes a key-value row again whenever a conversation changes, while state the
editor keeps elsewhere changes nothing here. Not resumable from a shell.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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

NAME = "cursor_ide"
DATABASE = "state.vscdb"
COMPOSER = "composerData:"
BUBBLE = "bubbleId:"
POSITION_BITS = 20
_POSITION_MASK = (1 << POSITION_BITS) - 1


class _Header(msgspec.Struct):
    bubbleId: str | None = None


class _Tool(msgspec.Struct):
    name: str | None = None
    rawArgs: Any = None
    params: Any = None
    result: Any = None
    status: str | None = None


class _Bubble(msgspec.Struct):
    type: int | None = None
    text: Any = None
    toolFormerData: _Tool | None = None
    createdAt: Any = None


class _Composer(msgspec.Struct):
    composerId: str | None = None
    name: str | None = None
    fullConversationHeadersOnly: list[_Header] | None = None
    conversation: list[_Bubble] | None = None


class _Name(msgspec.Struct):
    name: str | None = None


# The bubble types Cursor writes; any other is format drift (``drift``).
BUBBLE_ROLES = {1: "user", 2: "assistant"}

_decode_bubble = msgspec.json.Decoder(_Bubble).decode
_decode_composer = msgspec.json.Decoder(_Composer).decode
_decode_name = msgspec.json.Decoder(_Name).decode


def documents(bubble: _Bubble) -> tuple[str, list[Document]]:
    """Role and documents of one bubble: its text, and a tool call with its result."""
    role = BUBBLE_ROLES.get(bubble.type or 0, "")
    docs: list[Document] = []
    if not role and bubble.type is not None:
        drift.note(drift.RECORD, f"bubble.{bubble.type}")  # a new kind: its words are kept
        role = "assistant"
    if not role:
        return role, docs
    if isinstance(bubble.text, str) and bubble.text.strip():
        docs.append(Document(0, "user_text" if role == "user" else "assistant_text", bubble.text))
    tool = bubble.toolFormerData
    if tool is not None and role == "assistant":
        args = tool.rawArgs if tool.rawArgs not in (None, "") else tool.params
        if args not in (None, ""):
            docs.append(tool_call_document(1, tool.name, args))
        if tool.result not in (None, ""):
            output = arguments_text(tool.result)
            docs.append(tool_result_document(2, tool.name, output, tool.status == "error"))
    return role, docs


def _created(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    return parse_time(value) if isinstance(value, str) else None


def _message(
    bubble: _Bubble, locator: int, length: int, index: int, composer: str, title: str | None
) -> SourceMessage:
    role, docs = documents(bubble)
    message = SourceMessage(index, locator, length, role, _created(bubble.createdAt), docs)
    message.session_id, message.title = composer, title
    return message


def _value(db: sqlite3.Connection, sql: str, key: Any) -> tuple[int, bytes] | None:
    found = sqlitedb.rows(db, sql, (key,))
    if not found or found[0]["value"] is None:
        return None
    value = found[0]["value"]
    return int(found[0]["rowid"]), value.encode() if isinstance(value, str) else value


_BY_ROWID = "SELECT rowid, value FROM cursorDiskKV WHERE rowid = ?"
_BY_KEY = "SELECT rowid, value FROM cursorDiskKV WHERE key = ?"
_COMPOSERS = "SELECT rowid, key FROM cursorDiskKV WHERE key >= ? AND key < ? ORDER BY rowid"
_COMPOSER_RANGE = (COMPOSER, COMPOSER[:-1] + ";")  # every key that starts "composerData:"


def _has_table(db: sqlite3.Connection) -> bool:
    sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cursorDiskKV'"
    return bool(sqlitedb.rows(db, sql))


def _read(path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
    result.end_offset = LOCATOR_CHECKPOINT
    with sqlitedb.reading(path) as db:
        if not _has_table(db):
            return  # an editor database without Cursor's chats
        for row in sqlitedb.rows(db, _COMPOSERS, _COMPOSER_RANGE):
            found = _value(db, _BY_ROWID, row["rowid"])
            if found is None:
                continue
            rowid, raw = found
            budget.check(path, "record", len(raw))
            try:
                composer = _decode_composer(raw)
            except (msgspec.DecodeError, RecursionError) as exc:
                result.errors.append(LineError(rowid << POSITION_BITS, error_class(exc)))
                continue
            composer_id = composer.composerId or str(row["key"])[len(COMPOSER) :]
            inline = (rowid, len(raw))
            for message in _composer_messages(
                db, path, composer, composer_id, inline, result, budget
            ):
                result.bytes_read += message.length
                result.next_index += 1
                yield message


def _composer_messages(
    db: sqlite3.Connection,
    path: Path,
    composer: _Composer,
    composer_id: str,
    inline: tuple[int, int],
    result: ReadResult,
    budget: Budget,
) -> Iterator[SourceMessage]:
    """A composer's effective conversation: its listed bubbles, else its inline array
    (``inline``: the composer's row id and size, which its inline bubbles share)."""
    title = composer.name or None
    if composer.fullConversationHeadersOnly:
        for header in composer.fullConversationHeadersOnly:
            found = _value(db, _BY_KEY, f"{BUBBLE}{composer_id}:{header.bubbleId}")
            if found is None:
                continue  # listed but not written (yet)
            bubble_row, raw = found
            budget.check(path, "record", len(raw))
            locator = bubble_row << POSITION_BITS
            try:
                bubble = _decode_bubble(raw)
            except (msgspec.DecodeError, RecursionError) as exc:
                result.errors.append(LineError(locator, error_class(exc)))
                continue
            yield _message(bubble, locator, len(raw), result.next_index, composer_id, title)
        return
    rowid, size = inline
    bubbles = (composer.conversation or [])[:_POSITION_MASK]
    for position, bubble in enumerate(bubbles):
        locator = (rowid << POSITION_BITS) | (position + 1)
        yield _message(bubble, locator, size // len(bubbles), result.next_index, composer_id, title)


def _load(path: Path, locator: int, index: int) -> SourceMessage | None:
    rowid, position = locator >> POSITION_BITS, locator & _POSITION_MASK
    with sqlitedb.reading(path) as db:
        found = sqlitedb.rows(db, "SELECT key, value FROM cursorDiskKV WHERE rowid = ?", (rowid,))
        if not found or found[0]["value"] is None:
            return None
        key, value = str(found[0]["key"]), found[0]["value"]
        raw = value.encode() if isinstance(value, str) else value
        if position:
            composer = _decode_composer(raw)
            inline = composer.conversation or []
            if position > len(inline):
                return None
            composer_id = composer.composerId or key[len(COMPOSER) :]
            share = len(raw) // len(inline)
            return _message(
                inline[position - 1], locator, share, index, composer_id, composer.name or None
            )
        composer_id = key[len(BUBBLE) :].rsplit(":", 1)[0]
        named = _value(db, _BY_KEY, f"{COMPOSER}{composer_id}")
    title = _decode_name(named[1]).name if named is not None else None
    return _message(_decode_bubble(raw), locator, len(raw), index, composer_id, title or None)


def _fingerprint(path: Path) -> FileStat:
    """Composer count and the key-value table's highest row id (a write gets a new one)."""
    inode = sqlitedb.stat(path).inode
    try:
        with sqlitedb.reading(path) as db:
            if not _has_table(db):
                return FileStat(0, 0, inode)
            count = sqlitedb.rows(
                db, "SELECT count(*) FROM cursorDiskKV WHERE key >= ? AND key < ?", _COMPOSER_RANGE
            )[0][0]
            highest = sqlitedb.rows(db, "SELECT max(rowid) FROM cursorDiskKV")[0][0]
    except SourceError:
        return sqlitedb.stat(path)  # unreadable now: the file itself tells of changes
    return FileStat(int(count), int(highest or 0), inode)


_FINGERPRINTS = FileMemo(_fingerprint, keep=4, stamp=sqlitedb.stat)


class CursorIdeFormat(SourceFormat):
    """Reader for the Cursor editor's global chat database; rebuilt on change."""

    name = NAME
    support = Support(
        agent="Cursor editor",
        versions="composer bubbles in `state.vscdb`",
        where=(
            "Linux `~/.config/Cursor/User/globalStorage`, macOS `~/Library/Application "
            "Support/Cursor/User/globalStorage`, Windows `%APPDATA%\\Cursor\\User\\globalStorage`"
        ),
        branches="each composer's bubble order",
        subagents="—",
        gaps="inline edits outside the composer",
    )
    append_only = False
    resume: str | None = None  # reopened from the editor's chat history, not from a shell
    source_names = frozenset({DATABASE})

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        return _read(path, result, budget)

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        try:
            return _load(path, offset, index)
        except (SourceError, msgspec.DecodeError, RecursionError):
            return None

    def info(self, path: Path) -> SessionInfo:
        return SessionInfo(session_id=NAME)  # its messages name their own composers

    def stat(self, path: Path, known: os.stat_result | None = None) -> FileStat:
        return _FINGERPRINTS.of(path)

    def claims(self, path: Path, fixed: bool) -> bool:
        return path.name == DATABASE and (fixed or path.parent.name == "globalStorage")

    def skip_dirs(self, names: frozenset[str], fixed: bool) -> frozenset[str]:
        # Beside the editor's database: extensions' own storage, never chats.
        return names - {DATABASE} if DATABASE in names else frozenset()


FORMAT = CursorIdeFormat()
