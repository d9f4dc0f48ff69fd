"""Event-log transcripts: one event a line, several events one displayed message.

Kimi Code's wire and Antigravity's step log write a message's pieces as lines of
their own (a step's text parts, its tool calls, then their results, between
bookkeeping events). A reader gives each event a *key*: the message it belongs to,
``SOLO`` for an event that is a message by itself, or ``None`` for bookkeeping.
Keyed events in a row with one key are one message whose span runs from its first
line to its last, so ``load`` re-reads that span, keeps the keyed events and builds
the same message. An appended line can extend the last message, so such formats are
rebuilt on change (``append_only = False``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from convodex.sources.base import Budget, ReadResult, SourceMessage
from convodex.sources.jsonl import decoded_lines, records_at

T = TypeVar("T")

SOLO = object()
"""The key of an event that is one message by itself (a prompt)."""

Key = Callable[[T], Hashable | None]
Build = Callable[[list[T], int, int, int], SourceMessage | None]


def grouped(
    path: Path, result: ReadResult, budget: Budget, decode: Callable[[bytes], T], key: Key[T]
) -> Iterator[tuple[int, int, list[T]]]:
    """(offset, length, events) of each message, in file order."""
    group: list[T] = []
    current: Hashable | None = None
    start = end = 0
    for offset, length, _, record in decoded_lines(path, result, budget, decode):
        k = key(record)
        if k is None:
            continue
        if group and (k is SOLO or k != current):
            yield start, end - start, group
            group = []
        if not group:
            start = offset
        group.append(record)
        current, end = k, offset + length
    if group:
        yield start, end - start, group


def event_messages(
    path: Path,
    result: ReadResult,
    budget: Budget,
    decode: Callable[[bytes], T],
    key: Key[T],
    build: Build[T],
) -> Iterator[SourceMessage]:
    """The messages of an event log; a group that builds nothing (no text) is left out."""
    for offset, length, records in grouped(path, result, budget, decode, key):
        message = build(records, offset, length, result.next_index)
        if message is not None:
            result.next_index += 1
            yield message


def records_in(
    handle: BinaryIO, offset: int, length: int, decode: Callable[[bytes], T], key: Key[T]
) -> list[T] | None:
    """The keyed events of one stored span (``None``: the file no longer holds it), for a
    ``load`` that builds the message as ``event_messages`` built it."""
    records = records_at(handle, offset, length, decode)
    return None if records is None else [r for r in records if key(r) is not None]
