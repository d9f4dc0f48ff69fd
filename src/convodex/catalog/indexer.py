"""Incremental indexing (SPEC L5): checkpoints, the append path and the rebuild path.

Each source's rows and its checkpoint commit in one transaction, so a crash at any
moment leaves a checkpoint that describes exactly the rows present. An append reads
only from the stored byte offset; a rewrite (shorter file, changed prefix, new
inode, an edit in place of the same size) rebuilds that source. Only a completed scan
removes vanished sources. A source that must not be read (a link out of its root, a
FIFO) or that breaks detection is failed by the scan that finds it, and the run goes on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

from convodex.catalog.batches import Batch, PendingSource, SourceReader
from convodex.catalog.commits import (
    Changes,
    apply_batch,
    delete_source_rows,
    in_rowid_order,
    retime_untimed,
)
from convodex.catalog.db import Catalog
from convodex.catalog.speed.wing import Wing
from convodex.catalog.stamps import record_listing, verify_signatures
from convodex.models import IndexStats
from convodex.sources.base import Budget
from convodex.sources.discover import (
    Discovered,
    Sniffed,
    describe,
    discover_file,
    scan,
    workspace_roots,
)
from convodex.sources.roots import Root, declared, root_format
from convodex.sqlite import marks, sqlite3

# A run's largest commit group when this process reads alone …
COMMIT_BYTES = 8 * 1024 * 1024
# … and with a helper process reading (two cores), whose next group is held too: the
# indexing tree's memory. On 200 MB of Claude Code sessions (load 2), 8 MiB groups
# peaked at 128 MiB of RSS (parent, helper, resource tracker), 2 MiB ones at 87 MiB,
# 8% slower; one process alone peaks at 47 MiB with 8 MiB groups, 5% faster than 2.
HELPED_COMMIT_BYTES = 2 * 1024 * 1024
# The first commit of a run: its newest sessions are searchable after this much.
FIRST_COMMIT_BYTES = 1024 * 1024
Progress = Callable[[int, int], None]
"""Called with (bytes done, bytes total) as indexing advances."""

_PENDING_COLUMNS = (
    "id, path, format, byte_offset, message_count, inode, signature, size, mtime_ns, subagent, "
    "unit_count"
)
_KNOWN_COLUMNS = "id, size, mtime_ns, inode, pending, health, format"


class Indexer:
    """Brings the catalog up to date with roots, one source at a time."""

    def __init__(
        self,
        catalog: Catalog,
        budget: Budget | None = None,
        follow_symlinks: bool = False,
        speed: Wing | None = None,
    ) -> None:
        self.catalog = catalog
        self.budget = budget or Budget.from_env()
        # The accelerators (a helper process, bands kept current): none unless given.
        self.speed = speed or Wing()
        # Read sources that are links out of their root (``--follow-symlinks``).
        self.follow_symlinks = follow_symlinks
        self.stats = IndexStats()
        # What this indexer's scans sniffed: its rescans open no unchanged file again.
        self.sniffed = Sniffed()
        self._commit_cap = COMMIT_BYTES  # a run's largest commit group (``index_sources``)

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
        listed_at = time.time_ns()  # what the listing below sees is as of now
        # Files this root's sources already are keep their format: nothing is sniffed.
        formats = {
            (str(path), int(inode)): str(fmt)
            for path, inode, fmt in self.catalog.db.execute(
                "SELECT path, inode, format FROM sources WHERE root_id = ? AND inode IS NOT NULL",
                (root_id,),
            )
        }
        # Listing only: no transcript is read. Newest first, as they will be indexed:
        # new sources get ids (and so document rowids) in the order they are read, so
        # inserts append to the catalog's B-trees rather than split their pages.
        found = sorted(
            scan(root, self.follow_symlinks, formats, self.sniffed),
            key=lambda item: -item.stat.mtime_ns,
        )
        with self.catalog.transaction() as db:
            generation = self._next_generation(db)
            db.execute("UPDATE roots SET scan_generation = ? WHERE id = ?", (generation, root_id))
            record_listing(db, root_id, listed_at, full=True)  # checks list since then
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
            changes = Changes()
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
            unseen = db.execute(
                "SELECT id, path, health FROM sources WHERE root_id = ? AND seen_generation < ?",
                (root_id, generation),
            ).fetchall()
            gone = [row[0] for row in unseen if not os.path.exists(row[1])]
            changes = Changes()
            for source_id, path, health in unseen:
                # Replaced by a directory (a FIFO is listed, and failed, by the scan):
                # not a transcript any more, failed at once rather than kept as it was.
                if health != "failed" and os.path.isdir(path):
                    failed = Batch.failed(source_id, "failed", "NotARegularFile", None)
                    apply_batch(db, failed, changes=changes)
                    self.stats.count_failure("NotARegularFile")
            for source_id in gone:
                delete_source_rows(db, source_id)
                db.execute("DELETE FROM sources WHERE id = ?", (source_id,))
            db.execute(
                "UPDATE roots SET completed_generation = ?, "
                "last_completed_scan_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) "
                "WHERE id = ?",
                (generation, root_id),
            )
            if gone or changes.wiped:
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
        roots = list(roots)
        root_ids = [self.scan_root(root) for root in roots]
        verify_signatures(self.catalog)  # same size and mtime, other bytes: found here
        self.index_pending(root_ids, progress)
        # Aider keeps its history in the workspace it ran in: the ones sessions name.
        extra = [self.scan_root(root) for root in self.workspace_roots(roots)]
        self.index_pending(extra, progress)
        root_ids += extra
        for root_id in root_ids:
            self.complete_scan(root_id)
        self.refresh_bands()
        self.release_free_pages()
        self.stats.seconds = round(self.stats.seconds + time.perf_counter() - started, 3)
        return self.stats

    def workspace_roots(self, given: list[Path]) -> list[Root]:
        """The workspaces the catalog's sessions name that hold an Aider history
        (``discover.workspace_roots``), unless a root given covers them."""
        rows = self.catalog.db.execute(
            "SELECT DISTINCT workspace FROM sources WHERE workspace IS NOT NULL"
        ).fetchall()
        found = workspace_roots(str(row[0]) for row in rows)
        return [r for r in found if not any(r.is_relative_to(g) for g in given)]

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
            sql += f" AND root_id IN ({marks(root_ids)})"
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
        self._commit_cap = COMMIT_BYTES  # lowered by ``_read`` when a helper reads
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
                        commit_bytes = min(2 * commit_bytes, self._commit_cap)
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
        """Batches per source, in the given order: the wing's reader (a helper process)
        when it has one for this run, else read here."""
        cap = min(COMMIT_BYTES, HELPED_COMMIT_BYTES)
        helped = self.speed.reader(sources, total, sizes, self.budget, self.stats, cap)
        if helped is not None:
            self._commit_cap = cap
            yield from helped
            return
        reader = SourceReader(self.budget)
        for src in sources:
            yield src.id, reader.batches(src)
        self.stats.add(reader.stats)

    def _commit(self, group: list[Batch]) -> None:
        with self.catalog.transaction() as db:
            changes = self.speed.watch_commit(db)
            group = in_rowid_order(db, group)
            retime: list[int] = []
            for batch in group:
                apply_batch(db, batch, retime, changes)
            retime_untimed(db, retime)
            after = self.catalog.bump_revision(db)
        self.speed.after_commit(self.catalog, changes, after)

    def refresh_bands(self) -> int:
        """After a run: the accelerators' upkeep (every frequent word's band)."""
        return self.speed.after_run(self.catalog)

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


def _pending_stat(src: PendingSource) -> tuple[int, int]:
    """(bytes to read, modification time) of a pending source; a file gone is (0, 0)."""
    try:
        st = os.stat(src.path)
    except OSError:
        return 0, 0
    return max(0, st.st_size - src.byte_offset), st.st_mtime_ns
