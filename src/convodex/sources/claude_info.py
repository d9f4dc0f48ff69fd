"""A Claude Code file's listing facts (its workspace, start time, whether a headless
run wrote it, its title and the title record's place), read from as few lines as
possible; and the timestamps every reader parses the same way (``parse_time``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import msgspec

from convodex.sources.base import SessionInfo
from convodex.sources.jsonl import line_pieces, lines_matching

HEADLESS_ENTRYPOINTS = frozenset({"sdk-cli", "sdk-ts", "sdk-py"})


class _Info(msgspec.Struct):
    type: str | None = None
    sessionId: str | None = None
    cwd: str | None = None
    entrypoint: str | None = None
    summary: str | None = None
    customTitle: str | None = None
    timestamp: str | None = None


_decode_info = msgspec.json.Decoder(_Info).decode


def parse_time(value: str | None) -> int | None:
    """Milliseconds since the epoch of an ISO-8601 timestamp, or ``None``.

    ``datetime.fromisoformat`` is C code: about 0.6 µs a call, 3% of reading a Claude
    Code file (profilers make it look several times that, as they do every call).
    """
    if not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


# A line that may hold a title: only these are decoded once the session is known.
_TITLE_MARKS = (b'"summary"', b"custom-title")


def scan_info(info: SessionInfo, blocks: Iterator[bytes]) -> None:
    """Listing facts from the first record naming the session and its directory, and
    the title of the last summary or custom-title record, with that record's place
    (the blocks are the file's whole lines from its start, in order).

    Every line is decoded until that first record; after it, only lines that may set
    a title (found by searching whole blocks, not line by line).
    """
    base = 0  # where the block starts in the file
    for block in blocks:
        pos = 0
        while pos < len(block):
            end = block.find(b"\n", pos) + 1 or len(block)
            found: _Info | None = None
            for start, length, rec in line_pieces(block[pos:end], _decode_info):
                _title(info, rec, base + pos + start, length)
                if found is None and (rec.cwd or rec.sessionId):
                    found = rec
            pos = end
            if found is not None:
                info.workspace_root = found.cwd
                info.created_at = parse_time(found.timestamp)
                if found.entrypoint in HEADLESS_ENTRYPOINTS:
                    info.subagent = info.headless = True
                for at, titled in lines_matching(block, _TITLE_MARKS, pos):
                    _titles(info, titled, base + at)
                base += len(block)
                for rest in blocks:
                    for at, titled in lines_matching(rest, _TITLE_MARKS):
                        _titles(info, titled, base + at)
                    base += len(rest)
                return
        base += len(block)


def _titles(info: SessionInfo, line: bytes, offset: int) -> None:
    """Take the titles of the records on the line at ``offset`` (several when glued)."""
    for start, length, rec in line_pieces(line, _decode_info):
        _title(info, rec, offset + start, length)


def _title(info: SessionInfo, rec: _Info | None, offset: int, length: int) -> None:
    """Take the title a record gives, and the record's place (``offset``, ``length``)."""
    if rec is None:
        return
    if rec.type == "summary" and rec.summary:
        info.title = rec.summary
    elif rec.type == "custom-title" and rec.customTitle:
        info.title = rec.customTitle
    else:
        return
    info.title_span = (offset, length)


def _info_record(line: bytes) -> _Info | None:
    try:
        return _decode_info(line)
    except (msgspec.DecodeError, RecursionError):
        return None


def title_of(line: bytes, offset: int, length: int) -> str | None:
    """The title the summary or custom-title record ``line`` gives (at ``offset``)."""
    found = SessionInfo(session_id="")
    _title(found, _info_record(line), offset, length)
    return found.title
