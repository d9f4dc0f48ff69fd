"""Turning sources into rows: the file-reading half of indexing, with no database.

Runs in the indexing process or in a helper process, so that reading and
tokenizing (Python) overlap with FTS5 inserts (SQLite) on two cores.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from convodex.errors import SourceError
from convodex.sources.base import Budget, ReadResult, SourceMessage, append_only
from convodex.sources.discover import FORMATS, FileStat, source_stat
from convodex.text.documents import KINDS, Kind
from convodex.text.tokens import cjk_run_tails, tokenize

# rowid = source_id << 32 | subagent << 31 | message_index << 8 | part_index << 3 | kind.
# Small steps between neighbouring messages keep FTS5's delta-encoded rowids short; the
# sub-agent bit marks sub-agent work inside a parent's file, so search can leave it out.
SOURCE_SHIFT = 32
SUBAGENT_BIT = 1 << 31
MESSAGE_SHIFT = 8
PART_SHIFT = 3
PART_LIMIT = 1 << (MESSAGE_SHIFT - PART_SHIFT)
MESSAGE_LIMIT = 1 << (SOURCE_SHIFT - 1 - MESSAGE_SHIFT)
KIND_BITS: dict[Kind, int] = {kind: i for i, kind in enumerate(KINDS)}
KIND_OF_BITS: dict[int, Kind] = dict(enumerate(KINDS))
BATCH_BYTES = 8 * 1024 * 1024
SIGNATURE_WINDOW = 4096
# A private-use mark: "the last character of a CJK run" (see text.tokens.cjk_run_tails).
TAIL_MARK = "\ue000"
# Errors that fail one source and never the run (L5 isolation).
SOURCE_FAILURES = (SourceError, OSError, UnicodeError, ValueError, RecursionError, MemoryError)


def doc_rowid(
    source_id: int, message_index: int, part: int, kind: Kind, subagent: bool = False
) -> int:
    return (
        (source_id << SOURCE_SHIFT)
        | (SUBAGENT_BIT if subagent else 0)
        | (message_index << MESSAGE_SHIFT)
        | (part << PART_SHIFT)
        | KIND_BITS[kind]
    )


def split_rowid(rowid: int) -> tuple[int, int, int, Kind]:
    """(source id, message index, part index, kind) of a document rowid."""
    return (
        rowid >> SOURCE_SHIFT,
        (rowid >> MESSAGE_SHIFT) & (MESSAGE_LIMIT - 1),
        (rowid >> PART_SHIFT) & (PART_LIMIT - 1),
        KIND_OF_BITS[rowid & 7],
    )


def source_rowid_range(source_id: int) -> tuple[int, int]:
    return source_id << SOURCE_SHIFT, ((source_id + 1) << SOURCE_SHIFT) - 1


def projection_text(text: str) -> str:
    """What FTS5 receives for a document: tokens, never a copy of the text.

    The tables are contentless, so nothing given here is stored except its tokens.
    Pure-ASCII text goes in as is: the FTS5 ``ascii`` tokenizer (``_`` as a token
    character) splits and lower-cases it exactly like tokenizer v1. Anything else is
    tokenized here, with a marked tail for every CJK run (single-character search).
    """
    if text.isascii():
        return text
    tokens = tokenize(text)
    tails = cjk_run_tails(text)
    if tails:
        tokens.extend(TAIL_MARK + t for t in tails)
    return " ".join(tokens)


def signature(path: str | os.PathLike[str], offset: int) -> bytes:
    """Fingerprint of the bytes before ``offset``: its first and last 4 KiB and its length.

    Cheap enough to check on every append without rereading the indexed prefix.
    """
    digest = hashlib.blake2b(offset.to_bytes(8, "little"), digest_size=16)
    with open(path, "rb") as handle:
        digest.update(handle.read(min(offset, SIGNATURE_WINDOW)))
        start = max(0, offset - SIGNATURE_WINDOW)
        handle.seek(start)
        digest.update(handle.read(offset - start))
    return digest.digest()


def safe_signature(path: str | os.PathLike[str], offset: int) -> bytes | None:
    try:
        return signature(path, offset)
    except OSError:
        return None


@dataclass
class IndexStats:
    """What indexing did; counts only, never content (safe to print)."""

    roots: int = 0
    sources: int = 0
    indexed: int = 0
    appended: int = 0
    rebuilt: int = 0
    failed: int = 0
    missing: int = 0
    removed: int = 0
    messages: int = 0
    documents: int = 0
    line_errors: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)

    def add(self, other: IndexStats) -> None:
        for key, value in asdict(other).items():
            if key == "errors":
                for error_class, count in value.items():
                    self.errors[error_class] = self.errors.get(error_class, 0) + count
            else:
                setattr(self, key, getattr(self, key) + value)

    def count_failure(self, error_class: str) -> None:
        self.failed += 1
        self.errors[error_class] = self.errors.get(error_class, 0) + 1

    def as_json(self) -> dict[str, Any]:
        out = {_JSON_NAMES.get(key, key): value for key, value in asdict(self).items()}
        out["seconds"] = round(self.seconds, 3)
        return out


_JSON_NAMES = {"line_errors": "lineErrors", "bytes_read": "bytesRead"}


@dataclass(slots=True)
class PendingSource:
    """A source's checkpoint as stored, enough to continue or rebuild it."""

    id: int
    path: str
    format: str
    byte_offset: int
    message_count: int
    inode: int | None
    signature: bytes | None


@dataclass(slots=True)
class Batch:
    """Rows of one source range and the checkpoint that describes exactly them."""

    source_id: int
    wipe: bool
    documents: list[tuple[int, str]] = field(default_factory=list)
    outputs: list[tuple[int, str]] = field(default_factory=list)
    locations: list[tuple[int, int]] = field(default_factory=list)
    first_index: int = 0
    checkpoint: tuple[Any, ...] | None = None
    failure: tuple[Any, ...] | None = None
    # The (byte offset, message count) stored when this batch was read.
    expect: tuple[int, int] | None = None
    last_activity: int | None = None
    size: int = 0

    @classmethod
    def failed(
        cls, source_id: int, health: str, error_class: str | None, st: FileStat | None
    ) -> Batch:
        """A failed or missing source keeps no rows: no fallback to an older checkpoint."""
        batch = cls(source_id, wipe=True)
        batch.failure = (
            health,
            error_class,
            st.size if st else None,
            st.mtime_ns if st else None,
            st.inode if st else None,
            source_id,
        )
        return batch

    def add(self, message: SourceMessage) -> None:
        if not self.locations:
            self.first_index = message.index
        self.locations.append((message.offset, message.length))
        for doc in message.documents:
            if doc.part >= PART_LIMIT:
                continue  # more tool calls in one message than a rowid can name
            row = (
                doc_rowid(self.source_id, message.index, doc.part, doc.kind, message.subagent),
                projection_text(doc.text),
            )
            (self.outputs if doc.kind == "tool_output" else self.documents).append(row)
        if message.created_at is not None:
            self.last_activity = max(self.last_activity or 0, message.created_at)
        self.size += message.length


class SourceReader:
    """Reads pending sources into batches, recording what it did in ``stats``."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.stats = IndexStats()

    def batches(self, src: PendingSource) -> Iterator[Batch]:
        """The source's batches, each expecting the checkpoint the previous one leaves.

        Another process may index the same source at the same time; a batch whose
        expected checkpoint is no longer the stored one is skipped at commit.
        """
        expect = (src.byte_offset, src.message_count)
        for batch in self._batches(src):
            batch.expect = expect
            if batch.checkpoint is not None:
                expect = (batch.checkpoint[0], batch.checkpoint[1])
            yield batch

    def _batches(self, src: PendingSource) -> Iterator[Batch]:
        """The source's new rows; a failure ends with a batch that records it."""
        path = Path(src.path)
        try:
            st = source_stat(src.format, path)
        except FileNotFoundError:
            self.stats.missing += 1
            yield Batch.failed(src.id, "missing", None, None)
            return
        except OSError as exc:
            self.stats.count_failure(type(exc).__name__)
            yield Batch.failed(src.id, "failed", type(exc).__name__, None)
            return
        rebuild = (
            src.byte_offset == 0
            or not append_only(FORMATS[src.format])
            or src.inode != st.inode
            or st.size < src.byte_offset
            or src.signature != safe_signature(path, src.byte_offset)
        )
        result = ReadResult(0, 0) if rebuild else ReadResult(src.byte_offset, src.message_count)
        # Rows exist only behind a nonzero checkpoint (they commit together).
        batch = Batch(src.id, wipe=rebuild and src.byte_offset > 0)
        errors_seen = 0
        # Message payloads held before their commit, per source (L6 "retained"): a
        # batch is handed over when full or before it would go over; one message
        # alone over the budget fails the source.
        retained = self.budget.meter(path, "retained")
        try:
            for message in FORMATS[src.format].read(path, result, self.budget):
                if message.index >= MESSAGE_LIMIT:
                    raise SourceError(str(path), "too many messages in one session")
                if batch.locations and (
                    batch.size >= BATCH_BYTES or retained.used + message.length > retained.limit
                ):
                    errors_seen = self._checkpoint(
                        batch, path, st, result, errors_seen, False, before=message
                    )
                    yield batch
                    retained.release(retained.used)
                    batch = Batch(src.id, wipe=False)
                retained.add(message.length)
                batch.add(message)
            self._checkpoint(batch, path, st, result, errors_seen, True)
        except FileNotFoundError:
            self.stats.missing += 1  # vanished while being read
            yield Batch.failed(src.id, "missing", None, None)
            return
        except SOURCE_FAILURES as exc:
            self.stats.count_failure(type(exc).__name__)
            yield Batch.failed(src.id, "failed", type(exc).__name__, st)
            return
        self.stats.bytes_read += result.bytes_read
        self.stats.indexed += 1
        if rebuild:
            self.stats.rebuilt += 1
        else:
            self.stats.appended += 1
        yield batch

    def _checkpoint(
        self,
        batch: Batch,
        path: Path,
        st: FileStat,
        result: ReadResult,
        errors_seen: int,
        final: bool,
        before: SourceMessage | None = None,
    ) -> int:
        """Attach the checkpoint that describes exactly the rows up to this batch.

        ``before`` is the message the batch stops short of (already read, not in it).
        """
        new_errors = len(result.errors) - errors_seen
        end_offset = result.end_offset if before is None else before.offset
        next_index = result.next_index if before is None else before.index
        batch.checkpoint = (
            end_offset,
            next_index,
            st.size,
            st.mtime_ns,
            st.inode,
            signature(path, end_offset),
            0 if final else 1,
            result.errors[-1].error_class if result.errors else None,
            batch.wipe,
            new_errors,
            new_errors,
            batch.last_activity,
            st.mtime_ns // 1_000_000,
            batch.source_id,
        )
        self.stats.messages += len(batch.locations)
        self.stats.documents += len(batch.documents) + len(batch.outputs)
        self.stats.line_errors += new_errors
        return len(result.errors)


def read_in_helper(
    conn: Connection, sources: list[PendingSource], budget: Budget, group_bytes: int
) -> None:
    """Helper-process entry point: sources' batches in groups of about ``group_bytes``.

    The parent receives on its own thread, only when it wants the next group, so no
    thread of the parent competes with its SQLite inserts for the GIL; the pipe keeps
    the helper one group ahead: it reads group N+1 while the parent commits group N.
    """
    reader = SourceReader(budget)
    try:
        group: list[tuple[int, list[Batch]]] = []
        size = 0
        for src in sources:
            batches = list(reader.batches(src))
            group.append((src.id, batches))
            size += sum(b.size for b in batches)
            if size >= group_bytes:
                conn.send(group)
                group, size = [], 0
        conn.send(group)
        conn.send(reader.stats)
    finally:
        conn.close()
