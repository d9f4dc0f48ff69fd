"""Walking a JSONL transcript: the line loops every line-oriented reader shares."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import msgspec

from convodex.sources import jsonspan
from convodex.sources.base import Budget, LineError, ReadResult, SourceMessage, open_source

T = TypeVar("T")

# A JSON string escape: ``\uXXXX`` (captured) or any other escaped character.
_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
_REPLACEMENT = rb"\ufffd"


def _surrogate(match: re.Match[bytes] | None, low: bool) -> bool:
    """Whether an escape is a high (``low=False``) or low surrogate ``\\uXXXX``."""
    if match is None or match.group(1) is None:
        return False
    value = int(match.group(1), 16)
    return 0xDC00 <= value <= 0xDFFF if low else 0xD800 <= value <= 0xDBFF


def without_lone_surrogates(data: bytes) -> bytes:
    """``data`` with every unpaired surrogate escape (``"\\ud800"``) as ``\\ufffd``.

    Valid JSON (an ASCII-only encoder of a Python string writes them) that names no
    character, so decoders refuse the whole record. Escaped backslashes are skipped
    whole, so ``\\\\ud800`` (the text ``\\ud800``) is left alone. Returns ``data``
    itself when there is nothing to replace.
    """
    escapes = list(_ESCAPE.finditer(data))
    lone: list[re.Match[bytes]] = []
    paired = False
    for n, match in enumerate(escapes):
        if paired:  # the low half of the pair before it
            paired = False
            continue
        nxt = escapes[n + 1] if n + 1 < len(escapes) else None
        if _surrogate(match, low=False):
            paired = nxt is not None and nxt.start() == match.end() and _surrogate(nxt, True)
            if not paired:
                lone.append(match)
        elif _surrogate(match, low=True):
            lone.append(match)
    if not lone:
        return data
    parts, last = [], 0
    for match in lone:
        parts += [data[last : match.start()], _REPLACEMENT]
        last = match.end()
    parts.append(data[last:])
    return b"".join(parts)


def tolerant(decode: Callable[[Any], T]) -> Callable[[Any], T]:
    """``decode`` (of ``bytes`` or a ``memoryview``) that reads a record with lone
    surrogate escapes as U+FFFD instead of refusing it (only a record that failed
    pays for the second look)."""

    def run(data: Any) -> T:
        try:
            return decode(data)
        except msgspec.DecodeError:
            fixed = without_lone_surrogates(bytes(data))
            if fixed == data:
                raise
            return decode(fixed)

    return run


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
    """(offset, length, decoded bytes, decoded value) of each usable line, from byte 0.

    The decoded bytes are the line as read (terminator included), or the line
    stripped when only that decodes. Blank lines are skipped; a line that does not
    decode is counted in ``result.errors``; an undecodable unterminated last line is
    a write in progress and ends the walk. Once exhausted, ``result`` records the
    bytes consumed.

    The common line costs one decode and no copy; only a line that fails is
    stripped (whitespace JSON does not allow) and given ``tolerant``'s second look.
    """
    offset = 0
    limit = budget.max_record_bytes
    second_look = tolerant(decode)
    with open_source(path) as handle:
        for line in handle:
            length = len(line)
            if length > limit:
                budget.check(path, "record", length)
            body = line
            try:
                value = decode(line)
            except (msgspec.DecodeError, RecursionError):
                body = line.strip()
                if not body:
                    offset += length
                    continue
                try:
                    value = second_look(body)
                except (msgspec.DecodeError, RecursionError) as exc:
                    pieces = glued(body, second_look)
                    if pieces is not None:  # records written without a newline between
                        lead = line.find(body)
                        for start, end, piece in pieces:
                            yield offset + lead + start, end - start, body[start:end], piece
                        offset += length
                        continue
                    if not line.endswith(b"\n"):
                        break
                    result.errors.append(LineError(offset, error_class(exc)))
                    offset += length
                    continue
            yield offset, length, body, value
            offset += length
    result.end_offset = result.bytes_read = offset


def glued(body: bytes, decode: Callable[[bytes], T]) -> list[tuple[int, int, T]] | None:
    """``{…}{…}`` on one line (a writer fault several agents have): each object's
    (start, end, record), when the line is nothing but two or more objects that all
    decode; else ``None``. Every JSONL reader splits them the same way."""
    found: list[tuple[int, int, T]] = []
    pos = 0
    try:
        while pos < len(body):
            if body[pos : pos + 1] != b"{":
                return None
            end = jsonspan.value_end(body, pos)
            found.append((pos, end, decode(body[pos:end])))
            pos = jsonspan.skip_space(body, end)
    except (jsonspan.SpanError, IndexError, msgspec.DecodeError, RecursionError):
        return None
    return found if len(found) > 1 else None


def line_pieces(line: bytes, decode: Callable[[bytes], T]) -> list[tuple[int, int, T]]:
    """(start, length, record) in one line read outside ``decoded_lines`` (a light
    pass, a head, a listing scan): the line itself, or each record glued on it; none
    when it holds no record."""
    try:
        return [(0, len(line), decode(line))]
    except (msgspec.DecodeError, RecursionError):
        body = line.strip()
        lead = line.find(body) if body else 0
        return [(lead + start, end - start, rec) for start, end, rec in glued(body, decode) or ()]


def line_records(line: bytes, decode: Callable[[bytes], T]) -> list[T]:
    """The records of one line (``line_pieces``)."""
    return [record for _, _, record in line_pieces(line, decode)]


def records_at(
    handle: BinaryIO, offset: int, length: int, decode: Callable[[bytes], T]
) -> list[T] | None:
    """The records of the lines in one stored span; lines that no longer decode are skipped.

    ``None`` when the span's bytes are gone (the file shrank): the message is not there.
    Lines end at ``\\n`` only, as ``decoded_lines`` reads them.
    """
    handle.seek(offset)
    raw = handle.read(length)
    if len(raw) != length:
        return None
    decode = tolerant(decode)
    records = []
    for line in raw.split(b"\n"):
        body = line.strip()
        if body:
            try:
                records.append(decode(body))
            except (msgspec.DecodeError, RecursionError):
                pieces = glued(body, decode)
                records += [piece for _, _, piece in pieces or ()]
    return records


# Files up to this size keep their decoded records between the passes of a reader that
# finds its effective branch first (``KeptRecords``); larger ones are decoded again.
KEEP_RECORDS_MAX_BYTES = 16 * 1024 * 1024


def keeps_records(size: int, budget: Budget) -> bool:
    """Whether a file of ``size`` bytes is read in one pass: its records kept decoded
    (never more than the retained-payload budget allows)."""
    return size <= min(KEEP_RECORDS_MAX_BYTES, budget.max_retained_bytes)


class KeptRecords(Generic[T]):
    """Records decoded by a reader's first pass, by line offset, for its second.

    Formats that pick their effective branch before building messages (a tree, a
    rollback) used to decode structure first, then every chosen record again; a
    file small enough (``keeps_records``) is decoded once in full instead, and its
    messages are built from these. ``within`` answers what ``records_at`` would
    for the same span: the kept records of the lines that start inside it.
    """

    __slots__ = ("offsets", "records")

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.records: list[T] = []

    def add(self, offset: int, record: T) -> None:
        """Keep one line's record (lines come in file order)."""
        self.offsets.append(offset)
        self.records.append(record)

    def within(self, offset: int, length: int) -> list[T]:
        low = bisect.bisect_left(self.offsets, offset)
        high = bisect.bisect_left(self.offsets, offset + length, low)
        return self.records[low:high]


BLOCK_BYTES = 1024 * 1024


def line_blocks(handle: BinaryIO, limit: int) -> Iterator[bytes]:
    """The whole lines of a file from its start, in blocks of about ``BLOCK_BYTES``.

    Only lines that end within the first ``limit`` bytes are given (the last line of
    a file ends at its end, with or without a newline). Searching a block costs no
    Python work per line, where iterating lines does.
    """
    carry = b""
    left = limit
    while left > 0:
        chunk = handle.read(min(BLOCK_BYTES, left))
        if not chunk:
            break
        left -= len(chunk)
        buf = carry + chunk if carry else chunk
        cut = buf.rfind(b"\n") + 1
        if cut:
            yield buf[:cut]
        carry = buf[cut:]
    if carry and not handle.read(1):
        yield carry  # an unterminated last line, within the limit


def lines_matching(
    block: bytes, needles: tuple[bytes, ...], start: int = 0
) -> Iterator[tuple[int, bytes]]:
    """Each line of ``block`` from ``start`` (a line's start) holding any of ``needles``
    (none holds a newline), once, in order, with its position in ``block``.
    ``bytes.find`` per needle: far faster than a regular expression's scan."""
    found = {needle: block.find(needle, start) for needle in needles}
    while True:
        at = min((pos for pos in found.values() if pos >= 0), default=-1)
        if at < 0:
            return
        begin = block.rfind(b"\n", start, at) + 1 or start
        end = block.find(b"\n", at)
        end = len(block) if end < 0 else end + 1
        yield begin, block[begin:end]
        for needle, pos in found.items():
            if 0 <= pos < end:
                found[needle] = block.find(needle, end)


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
