"""Byte spans inside one JSON document, for formats that are not one record a line.

Gemini CLI chat files, chat exports, Cline message files and VS Code chat sessions
are single JSON documents. Search re-reads
one message by (offset, length), so the reader needs each message's own byte span.
The ``decoded_*`` helpers get them from msgspec, which finds every value's bytes at C
speed; the scanner walks the bytes (strings skipped whole by one regular expression)
and decides wherever msgspec refuses the bytes or an object repeats a key.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    _local.index = (buf, None)  # paired on first need: decoded spans never need it
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
    index: tuple[bytes, dict[int, int] | None] | None = getattr(_local, "index", None)
    if index is not None and index[0] is buf:
        ends = index[1]
        if ends is None:
            ends = _pair_brackets(buf)
            _local.index = (buf, ends)
        end = ends.get(start)
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


_decode_raw = msgspec.json.Decoder(msgspec.Raw).decode
_decode_raw_list = msgspec.json.Decoder(list[msgspec.Raw]).decode
_decode_raw_object = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_key = msgspec.json.Decoder(str).decode

# Decoded spans: msgspec finds every value's bytes at C speed (the scanner's walk over
# every string was most of reading a JSON document); a span follows from where its
# value starts and its length, since only whitespace and separators lie between
# values. Each helper answers None where msgspec refuses the bytes, or where an
# object repeats a key: the scanner decides those.


def decoded_elements(buf: bytes, start: int, raw: Any) -> list[tuple[int, int]] | None:
    """(start, end) of every element of the array at ``start``, whose bytes are ``raw``."""
    try:
        items = _decode_raw_list(raw)
    except msgspec.DecodeError:
        return None
    spans = []
    pos = start + 1
    for item in items:
        begin = skip_space(buf, pos)
        spans.append((begin, begin + len(item)))
        pos = skip_space(buf, begin + len(item)) + 1  # past the , or ]
    return spans


def decoded_members(buf: bytes, start: int, raw: Any) -> list[tuple[str, int, int]] | None:
    """(key, value start, value end) of every member of the object at ``start``, whose
    bytes are ``raw``."""
    try:
        document = _decode_raw_object(raw)
    except msgspec.DecodeError:
        return None
    if not document:
        return []
    out = []
    pos = skip_space(buf, start + 1)
    for n in range(len(document)):
        key_end = value_end(buf, pos)  # a string: one match
        key = _decode_key(buf[pos:key_end])
        begin = skip_space(buf, skip_space(buf, key_end) + 1)  # past the :
        value = document[key]
        if not buf.startswith(bytes(value), begin):
            return None  # a repeated key: the decoded value is its last one
        end = begin + len(value)
        out.append((key, begin, end))
        after = skip_space(buf, end)
        if buf[after : after + 1] == b"}":
            return out if n == len(document) - 1 else None
        pos = skip_space(buf, after + 1)  # past the ,
    return None  # more members than keys: a key repeats


def decoded_document(buf: bytes) -> tuple[int, int] | None:
    """(start, end) of the JSON value that is the whole of ``buf``."""
    try:
        raw = _decode_raw(buf)
    except msgspec.DecodeError:
        return None
    start = skip_space(buf, 0)
    return start, start + len(raw)


def _decoded_spans(buf: bytes, keys: tuple[str, ...]) -> list[tuple[int, int]] | None:
    """``array_spans``' answer from the decoded helpers, else None."""
    whole = decoded_document(buf)
    if whole is None:
        return None
    start, end = whole
    if buf[start : start + 1] != b"[":
        members = decoded_members(buf, start, memoryview(buf)[start:end])
        if members is None:
            return None
        found = next(((s, e) for k in keys for key, s, e in members if key == k), None)
        if found is None:
            return []
        start, end = found
        if buf[start : start + 1] != b"[":
            return None
    elements = decoded_elements(buf, start, memoryview(buf)[start:end])
    return None if elements is None else [(s, e - s) for s, e in elements]


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
    decoded = _decoded_spans(buf, keys)
    if decoded is not None:
        return decoded
    try:
        return _scanned_spans(buf, keys)
    except (SpanError, IndexError):
        result.errors.append(LineError(0, "MalformedJSON"))
        return []


def _scanned_spans(buf: bytes, keys: tuple[str, ...]) -> list[tuple[int, int]]:
    """``array_spans``' answer by walking the bytes: what decides for bytes msgspec
    refuses (raises ``SpanError`` or ``IndexError`` for those not of that shape)."""
    start = skip_space(buf, 0)
    if buf[start : start + 1] != b"[":
        found = next((f for f in (member(buf, start, k) for k in keys) if f), None)
        if found is None:
            return []
        start = found[0]
    return [(s, e - s) for s, e in elements(buf, start)]
