"""Byte spans inside one JSON document, for formats that are not one record a line.

Gemini CLI chat files, chat exports, Cline message files and VS Code chat sessions
are single JSON documents. Search re-reads
one message by (offset, length), so the reader needs each message's own byte span:
this scanner walks the bytes (strings skipped whole by one regular expression) and
reports where array elements and object members start and end, without decoding.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import msgspec

from convodex.sources.base import Budget, LineError, ReadResult

# A whole string (escapes included) or one structural character.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)
_SPACE = b" \t\r\n"
_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")
_local = threading.local()


class SpanError(ValueError):
    """The bytes are not the JSON shape the reader expected."""


def skip_space(buf: bytes, pos: int) -> int:
    n = len(buf)
    while pos < n and buf[pos] in _SPACE:
        pos += 1
    return pos


@contextlib.contextmanager
def indexed(buf: bytes) -> Iterator[None]:
    """Within this block (on this thread), containers of ``buf`` find their end at once.

    One pass pairs every bracket; without it each nested container is walked again
    by every enclosing one, which made whole exports several times slower to scan.
    """
    previous = getattr(_local, "index", None)
    _local.index = (buf, _pair_brackets(buf))
    try:
        yield
    finally:
        _local.index = previous


def _pair_brackets(buf: bytes) -> dict[int, int]:
    ends: dict[int, int] = {}
    stack: list[int] = []
    for m in _TOKEN.finditer(buf):
        ch = buf[m.start()]
        if ch in _OPEN:
            stack.append(m.start())
        elif ch in _CLOSE and stack:
            ends[stack.pop()] = m.end()
    return ends


def value_end(buf: bytes, start: int) -> int:
    """End (exclusive) of the JSON value that starts at ``start``."""
    first = buf[start : start + 1]
    if first == b'"':
        m = _TOKEN.match(buf, start)
        if m is None:
            raise SpanError("unterminated string")
        return m.end()
    if first not in (b"[", b"{"):
        pos = start
        while pos < len(buf) and buf[pos] not in b",]}" and buf[pos] not in _SPACE:
            pos += 1
        return pos
    index: tuple[bytes, dict[int, int]] | None = getattr(_local, "index", None)
    if index is not None and index[0] is buf:
        end = index[1].get(start)
        if end is None:
            raise SpanError("unterminated value")
        return end
    depth = 0
    for m in _TOKEN.finditer(buf, start):
        ch = buf[m.start()]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth == 0:
                return m.end()
    raise SpanError("unterminated value")


def elements(buf: bytes, start: int) -> Iterator[tuple[int, int]]:
    """(start, end) of every element of the array whose ``[`` is at ``start``."""
    if buf[start : start + 1] != b"[":
        raise SpanError("expected an array")
    pos = skip_space(buf, start + 1)
    if buf[pos : pos + 1] == b"]":
        return
    while True:
        end = value_end(buf, pos)
        yield pos, end
        pos = skip_space(buf, end)
        sep = buf[pos : pos + 1]
        if sep == b"]":
            return
        if sep != b",":
            raise SpanError("expected , or ] in an array")
        pos = skip_space(buf, pos + 1)


def members(buf: bytes, start: int) -> Iterator[tuple[str, int, int]]:
    """(key, value start, value end) of every member of the object at ``start``."""
    if buf[start : start + 1] != b"{":
        raise SpanError("expected an object")
    pos = skip_space(buf, start + 1)
    if buf[pos : pos + 1] == b"}":
        return
    while True:
        key_end = value_end(buf, pos)
        try:
            key = msgspec.json.decode(buf[pos:key_end], type=str)
        except msgspec.DecodeError as exc:
            raise SpanError("bad object key") from exc
        pos = skip_space(buf, key_end)
        if buf[pos : pos + 1] != b":":
            raise SpanError("expected : after a key")
        pos = skip_space(buf, pos + 1)
        end = value_end(buf, pos)
        yield key, pos, end
        pos = skip_space(buf, end)
        sep = buf[pos : pos + 1]
        if sep == b"}":
            return
        if sep != b",":
            raise SpanError("expected , or } in an object")
        pos = skip_space(buf, pos + 1)


def member(buf: bytes, start: int, name: str) -> tuple[int, int] | None:
    """The span of one member's value in the object at ``start``, if present."""
    for key, vstart, vend in members(buf, start):
        if key == name:
            return vstart, vend
    return None


def array_spans(
    path: Path, result: ReadResult, budget: Budget, keys: tuple[str, ...] = ()
) -> list[tuple[int, int]]:
    """(offset, length) of each element of a JSON document's message array.

    The array is the document itself, or the first of ``keys`` the top-level object
    has (none: no messages). The whole file is one record for the budget; bytes that
    are not that shape are one ``MalformedJSON`` error for the source.
    """
    with open(path, "rb") as handle:
        buf = handle.read()
    budget.check(path, "record", len(buf))
    result.end_offset = result.bytes_read = len(buf)
    try:
        start = skip_space(buf, 0)
        if buf[start : start + 1] != b"[":
            found = next((f for f in (member(buf, start, k) for k in keys) if f), None)
            if found is None:
                return []
            start = found[0]
        return [(s, e - s) for s, e in elements(buf, start)]
    except (SpanError, IndexError):
        result.errors.append(LineError(0, "MalformedJSON"))
        return []
