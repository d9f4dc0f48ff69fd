"""Walking a JSONL transcript: the line loop every line-oriented reader shares."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import msgspec

from convodex.sources.base import Budget, LineError, ReadResult

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
