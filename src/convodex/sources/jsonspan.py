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


_decode_raw_list = msgspec.json.Decoder(list[msgspec.Raw]).decode
_decode_raw_object = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode


def _member_start(buf: bytes, start: int, name: str) -> int | None:
    """Where the value of member ``name`` of the object at ``start`` begins; only the
    members before it are walked."""
    if buf[start : start + 1] != b"{":
        raise SpanError("expected an object")
    pos = skip_space(buf, start + 1)
    while buf[pos : pos + 1] == b'"':
        key_end = value_end(buf, pos)
        key = msgspec.json.decode(buf[pos:key_end], type=str)
        pos = skip_space(buf, key_end)
        if buf[pos : pos + 1] != b":":
            raise SpanError("expected : after a key")
        pos = skip_space(buf, pos + 1)
        if key == name:
            return pos
        pos = skip_space(buf, value_end(buf, pos))
        if buf[pos : pos + 1] != b",":
            return None
        pos = skip_space(buf, pos + 1)
    return None


def _decoded_spans(buf: bytes, keys: tuple[str, ...]) -> list[tuple[int, int]] | None:
    """``array_spans``' answer from msgspec, which finds every element's bytes at C
    speed (the scanner's walk over every string was most of reading a JSON document);
    the spans follow from the elements' lengths. None when the bytes are not valid
    JSON of that shape, or a key repeats: the scanner decides those."""
    try:
        start = skip_space(buf, 0)
        if buf[start : start + 1] == b"[":
            array: bytes | msgspec.Raw = buf
        else:
            document = _decode_raw_object(buf)
            key = next((k for k in keys if k in document), None)
            if key is None:
                return []
            array = document[key]
            found = _member_start(buf, start, key)
            # The member the walk found must be the one decoded (a repeated key is not).
            if found is None or not buf.startswith(bytes(array), found):
                return None
            start = found
        items = _decode_raw_list(array)
    except (msgspec.DecodeError, SpanError):
        return None
    spans = []
    pos = start + 1
    for item in items:
        begin = skip_space(buf, pos)
        spans.append((begin, len(item)))
        pos = skip_space(buf, begin + len(item)) + 1  # past the , or ]
    return spans


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
