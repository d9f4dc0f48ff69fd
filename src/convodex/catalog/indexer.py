"""Incremental indexing (SPEC L5): checkpoints, the append path and the rebuild path.

Each source's rows and its checkpoint commit in one transaction, so a crash at any
moment leaves a checkpoint that describes exactly the rows present. An append reads
only from the stored byte offset; a rewrite (shorter file, changed prefix, new
inode, an edit in place of the same size) rebuilds that source. Only a completed scan
removes vanished sources. A source that must not be read (a link out of its root, a
FIFO) or that breaks detection is failed by the scan that finds it, and the run goes on.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import time
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

from convodex.catalog import bands, spans
from convodex.catalog.batches import (
    Batch,
    HelperChannel,
    PendingSource,
    SourceReader,
    read_in_helper,
)
from convodex.catalog.db import Catalog
from convodex.catalog.rowids import (
    DOCUMENTS,
    OUTPUTS,
    SLOT_SHIFT,
    UNITS_PER_SLOT,
    moved,
    moved_pairs,
    slot_ranges,
    slot_steps,
)
from convodex.catalog.split import usable_cpus
from convodex.models import IndexStats
from convodex.sources.base import Budget
from convodex.sources.discover import Discovered, describe, discover_file, remember, scan
from convodex.sources.roots import Root, declared, root_format
from convodex.sqlite import is_busy, sqlite3

COMMIT_BYTES = 8 * 1024 * 1024
# The first commit of a run: its newest sessions are searchable after this much.
FIRST_COMMIT_BYTES = 1024 * 1024
# A helper process pays for itself only on bulk work, and only with a core of its own:
# on one core it competes with the committing process and adds the cost of passing
# batches over (measured: one process on one core is faster than two); small sources
# travel whole.
HELPER_MIN_BYTES = 24 * 1024 * 1024
HELPER_MIN_CPUS = 2
HELPER_MAX_SOURCE_BYTES = 16 * 1024 * 1024
HELPER_POLL_SECONDS = 0.5
# While a helper starts (a new interpreter: 0.15-0.25 s here), the indexing process
# reads this much of the newest small sources itself: the first commits do not wait
# for the helper, and the committing process does not sit idle.
HELPER_HEAD_BYTES = 4 * 1024 * 1024
# The sources this process may read itself while the helper is busy (``Claims``):
# small ones only, so a commit the helper has ready never waits long.
CLAIM_MAX_SOURCE_BYTES = 1024 * 1024
# … and at most this much of them read ahead of what the helper still owes (memory).
CLAIM_AHEAD_BYTES = 4 * 1024 * 1024
# What ``_read_in_helper`` yields first: the helper process has been started.
STARTED: tuple[int, list[Batch]] = (-1, [])

Progress = Callable[[int, int], None]
"""Called with (bytes done, bytes total) as indexing advances."""

_PENDING_COLUMNS = (
    "id, path, format, byte_offset, message_count, inode, signature, size, mtime_ns, subagent, "
    "unit_count"
)
_KNOWN_COLUMNS = "id, size, mtime_ns, inode, pending, health, format"
_INSERT_DOCUMENTS = "INSERT INTO documents(rowid, tokens) VALUES (?, ?)"
_INSERT_OUTPUTS = "INSERT INTO outputs(rowid, tokens) VALUES (?, ?)"
_UPDATE_CHECKPOINT = (  # parameters: a batches.Checkpoint
    "UPDATE sources SET byte_offset = :byte_offset, message_count = :message_count, "
    "unit_count = :unit_count, size = :size, mtime_ns = :mtime_ns, inode = :inode, "
    "signature = :signature, "
    "pending = :pending, health = 'ok', error_class = :error_class, "
    "line_errors = CASE WHEN :wipe THEN :line_errors ELSE line_errors + :line_errors END, "
    "last_activity_at = COALESCE(:last_activity_at, last_activity_at, :mtime_ms), "
    "first_activity_at = CASE WHEN :rebuild THEN :first_activity_at "
    "ELSE COALESCE(first_activity_at, :first_activity_at) END, "
    "title_index = CASE WHEN :rebuild THEN :title_index "
    "ELSE COALESCE(title_index, :title_index) END, "
    "workspace = COALESCE(:workspace, workspace), "
    "session_id = COALESCE(:session_id, session_id), subagent = COALESCE(:subagent, subagent), "
    "archived = COALESCE(:archived, archived), "
    "title_offset = CASE WHEN :rebuild THEN :title_offset END, "
    "title_length = CASE WHEN :rebuild THEN :title_length END, "
    "indexed_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE id = :id"
)
# One row a statement: a statement that writes many rows (INSERT … SELECT, an UPDATE of a
# range) opens a statement journal, and FTS5 flushes its pending terms at each one.
_INSERT_MESSAGES = (
    "INSERT INTO messages(base, at, timed, session_key, message, first_part) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
# Messages whose format records no time take their session's last activity (L13).
_UNTIMED_AT = (
    "UPDATE messages SET at = (SELECT last_activity_at FROM sources WHERE id = ?) "
    "WHERE base BETWEEN ? AND ? AND timed = 0"
)
_MARK_FAILED = (  # parameters: a batches.Failure
    "UPDATE sources SET health = :health, error_class = :error_class, pending = 0, "
    "byte_offset = 0, message_count = 0, unit_count = 0, signature = NULL, size = :size, "
    "mtime_ns = :mtime_ns, inode = :inode, title_index = NULL, first_activity_at = NULL "
    "WHERE id = :id"
)


def source_slots(db: sqlite3.Connection, source_id: int) -> list[int]:
    return [
        int(row[0])
        for row in db.execute("SELECT slot FROM slots WHERE source_id = ?", (source_id,))
    ]


def delete_source_rows(db: sqlite3.Connection, source_id: int) -> list[int]:
    """Delete a source's rows; returns the slots they were in."""
    slots = source_slots(db, source_id)
    for table in (DOCUMENTS, OUTPUTS):
        for low, high in slot_ranges(slots, table.slot_shift):
            db.execute(f"DELETE FROM {table.name} WHERE rowid BETWEEN ? AND ?", (low, high))
    for low, high in slot_ranges(slots):
        db.execute("DELETE FROM messages WHERE base BETWEEN ? AND ?", (low, high))
    db.execute("DELETE FROM spans WHERE source_id = ?", (source_id,))
    db.execute("DELETE FROM slots WHERE source_id = ?", (source_id,))
    return slots


def batch_slots(db: sqlite3.Connection, batch: Batch) -> dict[int, int]:
    """The slots of the batch's units (slot place k → slot), allocated as needed.

    A new slot takes the next number (``INTEGER PRIMARY KEY``): the sessions
    committed one after another sit next to each other in rowid order.
    """
    if batch.next_unit <= batch.first_unit:
        return {}
    first, last = batch.first_unit // UNITS_PER_SLOT, (batch.next_unit - 1) // UNITS_PER_SLOT
    slots = dict(
        db.execute(
            "SELECT k, slot FROM slots WHERE source_id = ? AND k BETWEEN ? AND ?",
            (batch.source_id, first, last),
        ).fetchall()
    )
    for k in range(first, last + 1):
        if k not in slots:
            cursor = db.execute(
                "INSERT INTO slots(source_id, k) VALUES (?, ?)", (batch.source_id, k)
            )
            slots[k] = int(cursor.lastrowid or 0)
    return slots


def apply_batch(
    db: sqlite3.Connection,
    batch: Batch,
    retime: list[int] | None = None,
    changes: bands.Changes | None = None,
) -> bool:
    """Apply one batch unless another process moved its source's checkpoint meanwhile.

    ``retime`` collects the sources whose untimed messages take their (new) last
    activity, for the caller to do after its other batches (``retime_untimed``); without
    it, that is done here. ``changes`` collects the documents added and the slots
    wiped, for the bands to follow (``bands.follow``).
    """
    if batch.expect is not None:
        row = db.execute(
            "SELECT byte_offset, message_count FROM sources WHERE id = ?", (batch.source_id,)
        ).fetchone()
        if row is None or (row[0], row[1]) != batch.expect:
            return False
    if batch.wipe:
        wiped = delete_source_rows(db, batch.source_id)
        if changes is not None:
            changes.wiped.update(wiped)
    if batch.failure is not None:
        db.execute(_MARK_FAILED, batch.failure._asdict())
        return True
    slots = batch_slots(db, batch)
    if slots:
        shift = DOCUMENTS.slot_shift
        documents = moved_pairs(batch.documents, slot_steps(slots, shift), shift)
        db.executemany(_INSERT_DOCUMENTS, documents)
        if changes is not None:
            changes.documents.extend(documents)
        shift = OUTPUTS.slot_shift
        db.executemany(_INSERT_OUTPUTS, moved_pairs(batch.outputs, slot_steps(slots, shift), shift))
        steps = slot_steps(slots, SLOT_SHIFT)
        db.executemany(_INSERT_MESSAGES, moved(batch.messages, steps, SLOT_SHIFT))
    spans.insert(db, batch.source_id, batch.first_index, batch.locations)
    if batch.checkpoint is not None:
        checkpoint = batch.checkpoint
        db.execute(_UPDATE_CHECKPOINT, checkpoint._asdict())
        # Once a read ends: untimed messages take the session's (new) last activity. A
        # rebuild that met none has none; an append may move earlier ones.
        if checkpoint.pending == 0 and (batch.untimed or not checkpoint.rebuild):
            if retime is None:
                retime_untimed(db, [batch.source_id])
            else:
                retime.append(batch.source_id)
    return True


def retime_untimed(db: sqlite3.Connection, source_ids: list[int]) -> None:
    """Untimed messages of these sources take their sources' last activity.

    An UPDATE of many rows opens a statement journal, and FTS5 flushes its pending
    terms to a new segment at every one: done after a commit group's inserts, it
    costs one flush (the commit's own), not one per source (measured on 210 MB of
    native sessions, where every session opens with an untimed system message: 6.5
    of 14 s of SQLite work went to these updates and the merges of their segments).
    """
    for source_id in source_ids:
        for low, high in slot_ranges(source_slots(db, source_id)):
            db.execute(_UNTIMED_AT, (source_id, low, high))


class Indexer:
    """Brings the catalog up to date with roots, one source at a time."""

    def __init__(
        self,
        catalog: Catalog,
        budget: Budget | None = None,
        helper_process: bool = True,
        follow_symlinks: bool = False,
    ) -> None:
        self.catalog = catalog
        self.budget = budget or Budget.from_env()
        self.helper_process = helper_process
        # Read sources that are links out of their root (``--follow-symlinks``).
        self.follow_symlinks = follow_symlinks
        self.stats = IndexStats()

    # -- scanning -------------------------------------------------------------------

    def root_id(self, root: Path) -> int:
        return self.stored_root(root)[0]

    def stored_root(self, root: Path) -> tuple[int, Root]:
        """The root's id, and the root as scanned: a format declared with it now is
        stored with it; a root named by path alone takes the format stored before (a
        reindex, a helper process, a hint know it only by its path)."""
        fmt = root.format if isinstance(root, Root) else None
        with self.catalog.transaction() as db:
            db.execute(
                "INSERT INTO roots(path, format) VALUES (?, ?) ON CONFLICT(path) DO UPDATE "
                "SET format = coalesce(excluded.format, format)",
                (str(root), fmt),
            )
            row = db.execute("SELECT id, format FROM roots WHERE path = ?", (str(root),)).fetchone()
        shallow = isinstance(root, Root) and root.shallow
        return int(row[0]), declared(root, row[1] or root_format(root), shallow)

    def scan_root(self, root: Path) -> int:
        """Register every transcript under ``root``; mark changed ones pending.

        Returns the root id. Sources not seen by this (completed) scan are removed.
        """
        root_id, root = self.stored_root(root)
        # Files this root's sources already are keep their format: nothing is sniffed.
        for path, inode, fmt in self.catalog.db.execute(
            "SELECT path, inode, format FROM sources WHERE root_id = ? AND inode IS NOT NULL",
            (root_id,),
        ):
            remember(path, inode, fmt)
        # Listing only: no transcript is read. Newest first, as they will be indexed:
        # new sources get ids (and so document rowids) in the order they are read, so
        # inserts append to the catalog's B-trees rather than split their pages.
        found = sorted(scan(root, self.follow_symlinks), key=lambda item: -item.stat.mtime_ns)
        with self.catalog.transaction() as db:
            generation = self._next_generation(db)
            db.execute("UPDATE roots SET scan_generation = ? WHERE id = ?", (generation, root_id))
            known = {
                row[0]: row[1:] for row in db.execute(f"SELECT path, {_KNOWN_COLUMNS} FROM sources")
            }
            for item in found:
                self._register(db, root_id, item, known.get(str(item.path)), generation)
        self.stats.roots += 1
        self.stats.sources += len(found)
        return root_id

    def _register(
        self,
        db: sqlite3.Connection,
        root_id: int,
        item: Discovered,
        known: tuple[Any, ...] | None,
        generation: int,
    ) -> int:
        """Record one file a scan or a hint found; returns its source id.

        A new source is inserted pending and a changed one marked pending; one that
        must not be read is failed at once, without rows. Nothing is opened here: a new
        source's facts (session id, workspace, sub-agent …) are read with its messages,
        so the scan of a large history is a listing (on a 16,626-file history, opening
        each file for its description took 1.0 of the scan's 2.7 s).
        """
        st, error = item.stat, item.error
        if known is None:
            info, _ = describe(item.format, item.path, read=False)
            row = db.execute(
                "INSERT INTO sources(path, root_id, format, session_id, subagent, "
                "archived, workspace, seen_generation, pending, health) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'ok') RETURNING id",
                (
                    str(item.path),
                    root_id,
                    item.format,
                    info.session_id,
                    int(info.subagent),
                    int(info.archived),
                    info.workspace_root,
                    generation,
                    int(error is None),
                ),
            ).fetchone()
            source_id, changed, health = int(row[0]), True, "ok"
        else:
            source_id, size, mtime_ns, inode, pending, health, stored_format = known
            changed = (size, mtime_ns, inode) != (st.size, st.mtime_ns, st.inode)
            pending = 0 if error is not None else 1 if (changed or pending) else 0
            db.execute(
                "UPDATE sources SET seen_generation = ?, pending = ? WHERE id = ?",
                (generation, pending, source_id),
            )
            if item.declared and item.format != stored_format and error is None:
                # The root's declared format wins over what an earlier scan guessed:
                # the source is read again from its start, by its declared reader.
                db.execute(
                    "UPDATE sources SET format = ?, byte_offset = 0, pending = 1 WHERE id = ?",
                    (item.format, source_id),
                )
        if error is not None and (changed or health != "failed"):
            changes = bands.Changes()
            apply_batch(db, Batch.failed(source_id, "failed", error, st), changes=changes)
            if changes.wiped:
                # Its rows are gone in this transaction: the catalog is another one
                # (cursors of the one before are stale; split's shares see the move).
                self.catalog.bump_revision(db)
            self.stats.count_failure(error)
        return int(source_id)

    def complete_scan(self, root_id: int) -> int:
        """After a completed scan: remove sources of this root that were not seen."""
        with self.catalog.transaction() as db:
            generation = db.execute(
                "SELECT scan_generation FROM roots WHERE id = ?", (root_id,)
            ).fetchone()[0]
            # Grace: a file the listing missed but that exists now (an atomic
            # replace in flight) is kept; only a file still absent is removed.
            gone = [
                row[0]
                for row in db.execute(
                    "SELECT id, path FROM sources WHERE root_id = ? AND seen_generation < ?",
                    (root_id, generation),
                )
                if not os.path.exists(row[1])
            ]
            for source_id in gone:
                delete_source_rows(db, source_id)
                db.execute("DELETE FROM sources WHERE id = ?", (source_id,))
            db.execute(
                "UPDATE roots SET completed_generation = ?, "
                "last_completed_scan_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) "
                "WHERE id = ?",
                (generation, root_id),
            )
            if gone:
                self.catalog.bump_revision(db)
        self.stats.removed += len(gone)
        return len(gone)

    @staticmethod
    def _next_generation(db: sqlite3.Connection) -> int:
        row = db.execute(
            "INSERT INTO catalog_meta(key, value) VALUES ('scan_generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING value"
        ).fetchone()
        return int(row[0])

    # -- indexing -------------------------------------------------------------------

    def run(self, roots: Iterable[Path], progress: Progress | None = None) -> IndexStats:
        """Scan every root, index what is pending, then clean up vanished sources."""
        started = time.perf_counter()
        self.catalog.require_writable()
        self.catalog.verify()  # damage anywhere is found now, not by a later search (L8)
        root_ids = [self.scan_root(root) for root in roots]
        self.index_pending(root_ids, progress)
        for root_id in root_ids:
            self.complete_scan(root_id)
        self.refresh_bands()
        self.release_free_pages()
        self.stats.seconds = round(self.stats.seconds + time.perf_counter() - started, 3)
        return self.stats

    def release_free_pages(self, threshold: float = 0.05) -> None:
        """Give back pages FTS5 segment merges freed, once they are a noticeable share."""
        db = self.catalog.db
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        total = db.execute("PRAGMA page_count").fetchone()[0]
        if total and free / total > threshold:
            with self.catalog.lock:
                # Stepped to its end: each step frees one page (a bare execute, one).
                db.execute("PRAGMA incremental_vacuum").fetchall()

    def pending_sources(self, root_ids: list[int] | None = None) -> list[PendingSource]:
        sql = f"SELECT {_PENDING_COLUMNS} FROM sources WHERE pending = 1"
        params: list[Any] = []
        if root_ids is not None:
            sql += f" AND root_id IN ({', '.join('?' for _ in root_ids)})"
            params.extend(root_ids)
        sql += " ORDER BY id"
        return [PendingSource(*row) for row in self.catalog.db.execute(sql, params)]

    def index_pending(
        self, root_ids: list[int] | None = None, progress: Progress | None = None
    ) -> None:
        self.index_sources(self.pending_sources(root_ids), progress)

    def index_sources(
        self,
        sources: list[PendingSource],
        progress: Progress | None = None,
        between: Callable[[], bool] | None = None,
    ) -> bool:
        """Read the sources, newest first, and commit their rows in groups.

        The most recently modified sources go first, so on a large history recent
        sessions are searchable within seconds; commit groups start small (the first
        rows show at once) and double up to ``COMMIT_BYTES``.

        ``between`` runs after every commit (a batch boundary: the scheduler yields
        to interactive reads there); when it returns False the run stops, with every
        committed group consistent. Returns whether every source was read.
        """
        self.catalog.require_writable()
        stats = {src.id: _pending_stat(src) for src in sources}
        sources = sorted(sources, key=lambda src: (-stats[src.id][1], src.id))
        sizes = {src_id: size for src_id, (size, _) in stats.items()}
        total, done = sum(sizes.values()), 0
        if progress:
            progress(0, total)
        group: list[Batch] = []
        group_bytes, commit_bytes = 0, min(FIRST_COMMIT_BYTES, COMMIT_BYTES)
        reads = self._read(sources, total, sizes)
        try:
            for src_id, batches in reads:
                for batch in batches:
                    group.append(batch)
                    group_bytes += batch.size
                    if group_bytes >= commit_bytes:
                        self._commit(group)
                        group, group_bytes = [], 0
                        commit_bytes = min(2 * commit_bytes, COMMIT_BYTES)
                        # Another indexing of the same source in between (a hint) is
                        # safe: batches whose checkpoint moved are skipped at commit.
                        if between is not None and not between():
                            return False
                done += sizes[src_id]
                if progress:
                    progress(done, total)
            if group:
                self._commit(group)
        finally:
            reads.close()  # stops a helper process that is reading ahead
        return True

    def _read(
        self, sources: list[PendingSource], total: int, sizes: dict[int, int]
    ) -> Generator[tuple[int, Iterable[Batch]], None, None]:
        """Batches per source, in the given order: small sources from a helper process
        on bulk runs with a core to spare, large ones (and everything else) read here."""
        reader = SourceReader(self.budget)
        # A helper returns a source whole, so whole sources must fit the retained budget.
        whole = min(HELPER_MAX_SOURCE_BYTES, self.budget.max_retained_bytes)
        small = [s for s in sources if sizes[s.id] <= whole]
        helped: Generator[tuple[int, Iterable[Batch]], None, None] | None = None
        # The newest small sources this process reads itself while the helper starts.
        head: set[int] = set()
        if self.helper_process and total >= HELPER_MIN_BYTES and len(small) > 1:
            if usable_cpus() >= HELPER_MIN_CPUS:
                head = _head(small, sizes, HELPER_HEAD_BYTES)
                rest = [s for s in small if s.id not in head]
                helped = self._read_in_helper(rest, reader, sizes)
                if next(helped, None) is not STARTED:
                    helped, head = None, set()  # it could not start: all is read here
        try:
            for src in sources:
                # The helper delivers the other small sources in this same order; once
                # it is done or gone, whatever it did not deliver is read here.
                mine = sizes[src.id] > whole or src.id in head
                item = next(helped, None) if helped is not None and not mine else None
                if item is None:
                    helped = helped if mine else None
                    yield src.id, reader.batches(src)
                else:
                    yield item
            for _ in helped or ():
                pass  # its last message: what it counted (the stats)
        finally:
            if helped is not None:
                helped.close()
        self.stats.add(reader.stats)

    def _read_in_helper(
        self, sources: list[PendingSource], reader: SourceReader, sizes: dict[int, int]
    ) -> Generator[tuple[int, Iterable[Batch]], None, None]:
        """Read and tokenize in a helper process while this one commits (two cores).

        Yields ``STARTED`` once the process is started, then each source's batches in
        the order given (``_delivered``); if the helper cannot start or connect, it
        yields nothing more and the caller reads the sources itself.
        """
        context = multiprocessing.get_context("spawn")
        with HelperChannel() as channel:
            # The helper gets only the channel's addresses: a small start-up message,
            # nothing it could read half of should this process die meanwhile.
            helper = context.Process(
                target=read_in_helper,
                args=(channel.address, channel.claims_path, self.budget, COMMIT_BYTES),
                daemon=True,
            )
            try:
                helper.start()
                yield STARTED  # the caller reads on while the new interpreter starts
                receive = channel.accept(helper.is_alive)
                if receive is None:
                    return  # it died before it connected
                with receive:
                    receive.send(sources)
                    yield from self._delivered(sources, sizes, reader, helper, receive, channel)
            except (EOFError, OSError):
                return
            finally:
                if helper.pid is not None:
                    helper.join(10)
                    if helper.is_alive():
                        helper.kill()
                        helper.join()

    def _delivered(
        self,
        sources: list[PendingSource],
        sizes: dict[int, int],
        reader: SourceReader,
        helper: multiprocessing.process.BaseProcess,
        receive: multiprocessing.connection.Connection,
        channel: HelperChannel,
    ) -> Generator[tuple[int, Iterable[Batch]], None, None]:
        """Each source's batches in order: the helper's, or read here when the next
        one is not delivered yet (a small one claimed here) or the helper died."""
        places = {src.id: place for place, src in enumerate(sources)}
        ready: dict[int, tuple[int, Iterable[Batch]]] = {}

        def small(place: int) -> bool:
            return sizes[sources[place].id] <= CLAIM_MAX_SOURCE_BYTES

        want, counted = 0, False
        held: dict[int, int] = {}  # bytes of the sources read here, not yet yielded
        while want < len(sources) or not counted:
            if want in ready:
                held.pop(want, None)
                yield ready.pop(want)
                want += 1
                continue
            ahead = sum(held.values()) < CLAIM_AHEAD_BYTES
            if want < len(sources) and ahead and not receive.poll(0):
                place = channel.claims.claim(len(sources), small)
                if place is not None:
                    src = sources[place]
                    ready[place] = (src.id, list(reader.batches(src)))
                    held[place] = sizes[src.id]
                    continue
            try:
                # Poll, so a helper that died can never leave this waiting.
                if not receive.poll(HELPER_POLL_SECONDS):
                    if helper.is_alive():
                        continue
                    if not receive.poll(0):
                        break
                item = receive.recv()
            except (EOFError, OSError):
                break
            group, counts, counted = item
            self.stats.add(counts)
            for src_id, batches in group:
                ready[places[src_id]] = (src_id, batches)
            if counted and want < len(sources) and want not in ready:
                break  # it is done, yet this one is missing: read here
        # What the helper did not deliver (it died): read here, in order.
        for place in range(want, len(sources)):
            src = sources[place]
            yield ready.pop(place) if place in ready else (src.id, reader.batches(src))

    def _commit(self, group: list[Batch]) -> None:
        changes = bands.Changes()
        with self.catalog.transaction() as db:
            before = bands.stamp(db)
            group = in_rowid_order(db, group)
            retime: list[int] = []
            for batch in group:
                apply_batch(db, batch, retime, changes)
            retime_untimed(db, retime)
            after = self.catalog.bump_revision(db)
        _unless_busy(lambda: bands.follow(self.catalog, before, after, changes))

    def refresh_bands(self) -> int:
        """After a run: bring every frequent word's band up to date (``bands``)."""
        return _unless_busy(lambda: bands.refresh(self.catalog))

    def source_by_path(self, path: str | os.PathLike[str]) -> PendingSource | None:
        row = self.catalog.db.execute(
            f"SELECT {_PENDING_COLUMNS} FROM sources WHERE path = ?", (os.fspath(path),)
        ).fetchone()
        return None if row is None else PendingSource(*row)

    def hinted(self, path: Path) -> PendingSource | None:
        """A file a hint names (a writer's, the watcher's): registered or refreshed as a
        scan of its root would, then returned when there is something to read.

        Only files under a known root count; the most specific root decides the format.
        """
        roots = self.catalog.db.execute(
            "SELECT id, path, scan_generation, format FROM roots"
        ).fetchall()
        owners = [
            (declared(rp, fmt), rid, gen) for rid, rp, gen, fmt in roots if path.is_relative_to(rp)
        ]
        if not owners:
            return None
        root, root_id, generation = max(owners, key=lambda owner: len(owner[0].parts))
        try:
            item = discover_file(path, root, root_format(root), self.follow_symlinks)
        except OSError:
            item = None  # vanished: a known source is read and recorded as missing
        if item is not None:
            with self.catalog.transaction() as db:
                known = db.execute(
                    f"SELECT {_KNOWN_COLUMNS} FROM sources WHERE path = ?", (str(path),)
                ).fetchone()
                self._register(db, root_id, item, known, generation or 0)
            if item.error is not None:
                return None
        return self.source_by_path(path)


def _unless_busy(work: Callable[[], int]) -> int:
    """Band upkeep, given up when another process keeps the catalog busy: what was
    indexed is committed, a stale band is only unused (FTS5 ranks that word), and the
    next run's refresh rebuilds it."""
    try:
        return work()
    except sqlite3.OperationalError as exc:
        if not is_busy(exc):
            raise
        return 0


def in_rowid_order(db: sqlite3.Connection, group: list[Batch]) -> list[Batch]:
    """The group in the order its rows' rowids will have: FTS5 flushes its pending
    terms to a new segment whenever a rowid is lower than the one before.

    An append into a slot the source already has goes first, by slot; rows that take
    new slots (new sources, rebuilds, a source's next 128 units) follow, in source
    order, and get slots in that order.
    """

    def key(batch: Batch) -> tuple[float, int, int]:
        slot: float = float("inf")
        if not batch.wipe and batch.failure is None and batch.first_unit % UNITS_PER_SLOT:
            row = db.execute(
                "SELECT slot FROM slots WHERE source_id = ? AND k = ?",
                (batch.source_id, batch.first_unit // UNITS_PER_SLOT),
            ).fetchone()
            if row is not None:
                slot = row[0]
        return slot, batch.source_id, batch.first_index

    return sorted(group, key=key)


def _head(sources: list[PendingSource], sizes: dict[int, int], limit: int) -> set[int]:
    """The first sources, in order, up to ``limit`` bytes (at least one, none of all)."""
    head: set[int] = set()
    total = 0
    for src in sources[:-1]:
        if total >= limit:
            break
        head.add(src.id)
        total += sizes[src.id]
    return head


def _pending_stat(src: PendingSource) -> tuple[int, int]:
    """(bytes to read, modification time) of a pending source; a file gone is (0, 0)."""
    try:
        st = os.stat(src.path)
    except OSError:
        return 0, 0
    return max(0, st.st_size - src.byte_offset), st.st_mtime_ns
