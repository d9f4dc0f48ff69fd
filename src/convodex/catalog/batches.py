"""Turning sources into rows: the file-reading half of indexing, with no database.

Runs in the indexing process or in a helper process, so that reading and
tokenizing (Python) overlap with FTS5 inserts (SQLite) on two cores.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import msgspec

from convodex.catalog.rowids import first_part, number, subagent_flag, unit_address, unit_key
from convodex.catalog.stamps import safe_signature, signature
from convodex.models import IndexStats
from convodex.sources import drift
from convodex.sources.base import (
    Budget,
    ReadResult,
    SessionInfo,
    SourceMessage,
)
from convodex.sources.discover import FORMATS, FileStat, source_stat
from convodex.text.query import tool_token
from convodex.text.tokens import TAIL_MARK, TOOL_MARK, cjk_run_tails, tokenize

BATCH_BYTES = 8 * 1024 * 1024
# Message times SQLite can store (a signed 64-bit integer of milliseconds).
TIME_MIN, TIME_MAX = -(2**63), 2**63 - 1
# Whatever goes wrong reading one source fails that source, never the run (L5
# isolation): budgets, OS errors, and a reader's surprise at hostile input alike.
SOURCE_FAILURES = (Exception,)


def projection_text(text: str, tool_name: str | None = None) -> str:
    """What FTS5 receives for a document: tokens, never a copy of the text.

    The tables are contentless, so nothing given here is stored except its tokens.
    Pure-ASCII text goes in as is: the FTS5 ``ascii`` tokenizer (``_`` as a token
    character) splits and lower-cases it exactly like tokenizer v1. Anything else is
    tokenized here, with a marked tail for every CJK run (single-character search).
    A tool's document also carries its tool's name as one marked token (``tool:``).
    """
    mark = "" if tool_name is None else f" {TOOL_MARK}{tool_token(tool_name)}"
    if text.isascii():
        return text + mark
    tokens = tokenize(text)
    tails = cjk_run_tails(text)
    if tails:
        tokens.extend(TAIL_MARK + t for t in tails)
    return " ".join(tokens) + mark


def title_place(info: SessionInfo | None) -> tuple[int | None, int | None]:
    """The catalog's (title_offset, title_length) for what a reader said."""
    if info is None or not info.title_located:
        return None, None
    return info.title_span if info.title_span is not None else (-1, None)


class Checkpoint(NamedTuple):
    """A source's stored checkpoint after a batch: what exactly its committed rows cover.

    Named for the SQL that stores it (``indexer._UPDATE_CHECKPOINT``).
    """

    byte_offset: int
    message_count: int
    unit_count: int
    size: int
    mtime_ns: int
    inode: int
    signature: bytes
    pending: int  # 0 once the source is read to its end
    error_class: str | None
    wipe: bool  # the batch replaces the source's rows: line errors restart from zero
    line_errors: int  # unusable records in this batch
    last_activity_at: int | None
    mtime_ms: int  # the activity time when no message records one
    # Facts of the read so far (L13, L14): a rebuild replaces the stored ones, an
    # append only fills what is missing.
    rebuild: bool
    first_activity_at: int | None
    title_index: int | None
    workspace: str | None
    # What the format's ``info`` says of the session, read when a source is read from
    # its start (a new source is registered by a scan without opening it): None on
    # an append, which keeps the stored facts.
    session_id: str | None
    subagent: int | None
    archived: int | None
    # Where the session's own title is (``SessionInfo.title_span``): a rebuild's
    # reader answers; offset -1 when the file holds none, None when unknown.
    title_offset: int | None
    title_length: int | None
    # The unknown record and block types of the read, as JSON (``drift``), on the
    # last batch of a read from the start (a rebuild) only; None: none met. An append
    # keeps the stored counts: every reader that counts today is rebuilt on change.
    unknown_shapes: str | None
    id: int


class Failure(NamedTuple):
    """A failed or missing source: no rows, and the file identity it failed at."""

    health: str
    error_class: str | None
    size: int | None
    mtime_ns: int | None
    inode: int | None
    id: int


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
    # The file's size and mtime at that checkpoint: the same size with another mtime
    # is an edit in place, which the log signature may not see (L5).
    size: int | None = None
    mtime_ns: int | None = None
    # A sub-agent's (or headless) session of its own: every row carries the sub-agent
    # bit, so search leaves it out by the rowid alone.
    subagent: bool = False
    unit_count: int = 0  # the units its committed rows use (``rowids``)

    def rewritten(self, st: FileStat) -> bool:
        """Whether the file was rewritten rather than appended to since the checkpoint."""
        return (
            self.inode != st.inode
            or st.size < self.byte_offset
            or (st.size == self.size and st.mtime_ns != self.mtime_ns)
            or self.signature != safe_signature(self.path, self.byte_offset)
        )


@dataclass(slots=True)
class Batch:
    """Rows of one source range and the checkpoint that describes exactly them."""

    source_id: int
    wipe: bool
    documents: list[tuple[int, str]] = field(default_factory=list)
    outputs: list[tuple[int, str]] = field(default_factory=list)
    locations: list[tuple[int, int]] = field(default_factory=list)
    first_index: int = 0
    checkpoint: Checkpoint | None = None
    failure: Failure | None = None
    # Per unit (``rowids``): (its first address, time, whether the message recorded it, its
    # own session, message index, first part).
    messages: list[tuple[int, int, int, str | None, int, int]] = field(default_factory=list)
    # The source's units this batch numbers: first_unit … next_unit - 1.
    first_unit: int = 0
    next_unit: int = 0
    # The (byte offset, message count) stored when this batch was read.
    expect: tuple[int, int] | None = None
    last_activity: int | None = None
    first_activity: int | None = None
    title_index: int | None = None
    # Whether the read so far met a message without its own time (its time is then
    # the session's last activity, updated as that moves).
    untimed: bool = False
    size: int = 0
    subagent: bool = False  # the source is a sub-agent session: every row is marked

    @classmethod
    def failed(
        cls, source_id: int, health: str, error_class: str | None, st: FileStat | None
    ) -> Batch:
        """A failed or missing source keeps no rows: no fallback to an older checkpoint."""
        batch = cls(source_id, wipe=True)
        batch.failure = Failure(
            health,
            error_class,
            st.size if st else None,
            st.mtime_ns if st else None,
            st.inode if st else None,
            source_id,
        )
        return batch

    def add(self, message: SourceMessage) -> None:
        index = message.index
        if not self.locations:
            self.first_index = index
        self.locations.append((message.offset, message.length))
        subagent = message.subagent
        unit = self.next_unit
        key, units, rowids = number(unit, subagent or self.subagent, message.documents)
        documents, outputs = self.documents, self.outputs
        for doc, rowid in zip(message.documents, rowids, strict=True):
            kind = doc.kind
            if kind == "tool_output":
                outputs.append((rowid, projection_text(doc.text, doc.tool_name)))
                continue
            if kind == "user_text" or kind == "assistant_text":
                documents.append((rowid, projection_text(doc.text)))
                if kind == "user_text" and self.title_index is None and not subagent:
                    self.title_index = index
            else:
                documents.append((rowid, projection_text(doc.text, doc.tool_name)))
        self.next_unit = unit + units
        at = message.created_at
        if at is not None and not TIME_MIN <= at <= TIME_MAX:
            at = None  # an agent's garbage no SQLite integer holds: no time
        timed = 1
        if at is None:
            at, timed = 0, 0
            self.untimed = True
        else:
            if self.last_activity is None or at > self.last_activity:
                self.last_activity = at
            if self.first_activity is None or at < self.first_activity:
                self.first_activity = at
        session = message.session_id
        self.messages.append((unit_address(key), at, timed, session, index, 0))
        for extra in range(1, units):
            further = unit_address(unit_key(unit + extra, subagent_flag(subagent or self.subagent)))
            self.messages.append((further, at, timed, session, index, first_part(extra)))
        self.size += message.length

    def time_untimed(self) -> None:
        """Give untimed messages the read's last activity now, when this batch holds a
        whole rebuilt source that has one: what the commit would otherwise set with an
        UPDATE (``indexer.retime_untimed``), which costs an FTS5 flush."""
        at = self.last_activity
        if not self.untimed or at is None:
            return
        self.messages = [row if row[2] else (row[0], at, 0, *row[3:]) for row in self.messages]
        self.untimed = False


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
                expect = (batch.checkpoint.byte_offset, batch.checkpoint.message_count)
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
        rebuild = src.byte_offset == 0 or not FORMATS[src.format].append_only or src.rewritten(st)
        result = ReadResult(0, 0) if rebuild else ReadResult(src.byte_offset, src.message_count)
        # Rows exist only behind a nonzero checkpoint (they commit together).
        unit = 0 if rebuild else src.unit_count
        batch = Batch(
            src.id,
            wipe=rebuild and src.byte_offset > 0,
            subagent=bool(src.subagent),
            first_unit=unit,
            next_unit=unit,
        )
        info: SessionInfo | None = None
        errors_seen = 0
        # Message payloads held before their commit, per source (L6 "retained"): a
        # batch is handed over when full or before it would go over; one message
        # alone over the budget fails the source.
        held, limit = 0, self.budget.max_retained_bytes
        fmt = FORMATS[src.format]
        try:
            # The session's facts (id, workspace, sub-agent …): read whenever the source
            # is read from its start, new (a scan registers it unopened: a large
            # history's newest sessions are searchable sooner) or rebuilt.
            if rebuild:
                info = fmt.info(path)
                batch.subagent = info.subagent
            for message in drift.counting(fmt.read(path, result, self.budget), result.unknown):
                if batch.locations and (batch.size >= BATCH_BYTES or held + message.length > limit):
                    errors_seen = self._checkpoint(
                        batch, path, st, result, errors_seen, rebuild, info, before=message
                    )
                    yield batch
                    held = 0
                    # The next batch goes on with the facts of the read so far.
                    batch = Batch(
                        src.id,
                        wipe=False,
                        first_activity=batch.first_activity,
                        title_index=batch.title_index,
                        untimed=batch.untimed,
                        subagent=batch.subagent,
                        first_unit=batch.next_unit,
                        next_unit=batch.next_unit,
                    )
                held += message.length
                if held > limit:
                    self.budget.check(path, "retained", held)
                batch.add(message)
            if rebuild and batch.first_index == 0:
                batch.time_untimed()  # the whole source, in one batch
            self._checkpoint(batch, path, st, result, errors_seen, rebuild, info)
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
        rebuild: bool,
        info: SessionInfo | None,
        before: SourceMessage | None = None,
    ) -> int:
        """Attach the checkpoint that describes exactly the rows up to this batch.

        ``before`` is the message the batch stops short of (already read, not in it);
        without it, this is the source's last batch.
        """
        title_offset, title_length = title_place(info)
        new_errors = len(result.errors) - errors_seen
        end_offset = result.end_offset if before is None else before.offset
        next_index = result.next_index if before is None else before.index
        batch.checkpoint = Checkpoint(
            byte_offset=end_offset,
            message_count=next_index,
            unit_count=batch.next_unit,
            size=st.size,
            mtime_ns=st.mtime_ns,
            inode=st.inode,
            signature=signature(path, end_offset),
            pending=0 if before is None else 1,
            error_class=result.errors[-1].error_class if result.errors else None,
            wipe=batch.wipe,
            line_errors=new_errors,
            last_activity_at=batch.last_activity,
            mtime_ms=st.mtime_ns // 1_000_000,
            rebuild=rebuild,
            first_activity_at=batch.first_activity,
            title_index=batch.title_index,
            workspace=None if info is None else info.workspace_root,
            session_id=None if info is None else info.session_id,
            subagent=None if info is None else int(info.subagent),
            archived=None if info is None else int(info.archived),
            title_offset=title_offset,
            title_length=title_length,
            unknown_shapes=(
                msgspec.json.encode(result.unknown).decode()
                if before is None and rebuild and result.unknown
                else None
            ),
            id=batch.source_id,
        )
        self.stats.messages += len(batch.locations)
        self.stats.documents += len(batch.documents) + len(batch.outputs)
        self.stats.line_errors += new_errors
        return len(result.errors)
