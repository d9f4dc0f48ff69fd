"""Walking a JSONL transcript: the line loops every line-oriented reader shares."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

import msgspec

from convodex.sources.base import Budget, LineError, ReadResult, SourceMessage

T = TypeVar("T")


def error_class(exc: BaseException) -> str:
    """A per-line error's class name, never its content."""
    if isinstance(exc, msgspec.ValidationError):
        return "InvalidRecord"
    if isinstance(exc, msgspec.DecodeError):
        return "MalformedJSON"
    return type(exc).__name__


def decoded_lines(
    path: Path, result: ReadResult, budget: Budget, decode: Callable[[bytes], T]
) -> Iterator[tuple[int, int, bytes, T]]:
    """(offset, length, stripped bytes, decoded value) of each usable line, from byte 0.

    Blank lines are skipped; a line that does not decode is counted in
    ``result.errors``; an undecodable unterminated last line is a write in progress
    and ends the walk. Once exhausted, ``result`` records the bytes consumed.
    """
    offset = 0
    with open(path, "rb") as handle:
        for line in handle:
            length = len(line)
            budget.check(path, "record", length)
            body = line.strip()
            if body:
                try:
                    value = decode(body)
                except (msgspec.DecodeError, RecursionError) as exc:
                    if not line.endswith(b"\n"):
                        break
                    result.errors.append(LineError(offset, error_class(exc)))
                else:
                    yield offset, length, body, value
            offset += length
    result.end_offset = result.bytes_read = offset


def records_at(
    handle: BinaryIO, offset: int, length: int, decode: Callable[[bytes], T]
) -> list[T] | None:
    """The records of the lines in one stored span; lines that no longer decode are skipped.

    ``None`` when the span's bytes are gone (the file shrank): the message is not there.
    """
    handle.seek(offset)
    raw = handle.read(length)
    if len(raw) != length:
        return None
    records = []
    for line in raw.splitlines():
        if line.strip():
            try:
                records.append(decode(line))
            except (msgspec.DecodeError, RecursionError):
                continue
    return records


def line_messages(
    path: Path,
    result: ReadResult,
    budget: Budget,
    decode: Callable[[bytes], T],
    build: Callable[[T, int, int, int], SourceMessage | None],
) -> Iterator[SourceMessage]:
    """One pass for formats where a message is one line: each record is decoded once.

    ``build(record, offset, length, index)`` makes the message, or ``None`` for a
    record that is not one (metadata, events); a format's ``load`` decodes the
    span and calls the same ``build``, so search rebuilds what was indexed.
    """
    for offset, length, _, record in decoded_lines(path, result, budget, decode):
        message = build(record, offset, length, result.next_index)
        if message is not None:
            result.next_index += 1
            yield message
