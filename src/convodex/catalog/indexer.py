"""Incremental indexing (SPEC L5): checkpoints, the append path and the rebuild path.

Each source's rows and its checkpoint commit in one transaction, so a crash at any
moment leaves a checkpoint that describes exactly the rows present. An append reads
only from the stored byte offset; a rewrite (shorter file, changed prefix, new
inode) rebuilds that source. Only a completed scan removes vanished sources.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from convodex.catalog.db import Catalog
from convodex.errors import SourceError
from convodex.hints import HintQueue
from convodex.sources.base import Budget, ReadResult, SourceMessage
from convodex.sources.discover import FORMATS, FileStat, format_of, scan
from convodex.sqlite import sqlite3
from convodex.text.documents import KINDS, Document
from convodex.text.tokens import cjk_run_tails, tokenize

SOURCE_SHIFT = 32
MESSAGE_SHIFT = 10
PART_LIMIT = 1 << MESSAGE_SHIFT
MESSAGE_LIMIT = 1 << (SOURCE_SHIFT - MESSAGE_SHIFT)
FLUSH_BYTES = 8 * 1024 * 1024
SIGNATURE_WINDOW = 4096
# A private-use mark: "the last character of a CJK run" (see text.tokens.cjk_run_tails).
TAIL_MARK = "\ue000"

_INSERT_DOC = (
    "INSERT INTO documents(rowid, user_text, assistant_text, tool_input, tool_output, tool_error) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_INSERT_MESSAGE = (
    "INSERT OR REPLACE INTO messages(source_id, message_index, byte_offset, byte_length) "
    "VALUES (?, ?, ?, ?)"
)
_KIND_SLOT = {kind: i for i, kind in enumerate(KINDS)}


def doc_rowid(source_id: int, message_index: int, part: int) -> int:
    return (source_id << SOURCE_SHIFT) | (message_index << MESSAGE_SHIFT) | part


def split_rowid(rowid: int) -> tuple[int, int, int]:
    return (
        rowid >> SOURCE_SHIFT,
        (rowid >> MESSAGE_SHIFT) & (MESSAGE_LIMIT - 1),
        rowid & (PART_LIMIT - 1),
    )


def source_rowid_range(source_id: int) -> tuple[int, int]:
    return source_id << SOURCE_SHIFT, ((source_id + 1) << SOURCE_SHIFT) - 1


def projection_text(text: str) -> str:
    """What FTS5 receives for a document: tokens, never a copy of the text.

    The table is contentless, so nothing given here is stored except its tokens.
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


@dataclass
class IndexStats:
    """What one indexing run did; no content, only counts (safe to print)."""

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

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["bytesRead"] = out.pop("bytes_read")
        out["lineErrors"] = out.pop("line_errors")
        out["seconds"] = round(self.seconds, 3)
        return out


Progress = Callable[[int, int], None]
"""Called with (bytes done, bytes total) as indexing advances."""


@dataclass(slots=True)
class _Source:
    id: int
    path: str
    format: str
    byte_offset: int
    message_count: int
    inode: int | None
    signature: bytes | None


class Indexer:
    """Brings the catalog up to date with roots; one source at a time."""

    def __init__(
        self,
        catalog: Catalog,
        budget: Budget | None = None,
        hints: HintQueue | None = None,
    ) -> None:
        self.catalog = catalog
        self.budget = budget or Budget.from_env()
        self.hints = hints
        self.stats = IndexStats()

    # -- scanning -------------------------------------------------------------------

    def root_id(self, root: Path) -> int:
        with self.catalog.transaction() as db:
            db.execute("INSERT OR IGNORE INTO roots(path) VALUES (?)", (str(root),))
            row = db.execute("SELECT id FROM roots WHERE path = ?", (str(root),)).fetchone()
        return int(row[0])

    def scan_root(self, root: Path) -> int:
        """Register every transcript under ``root``; mark changed ones pending.

        Returns the root id. Sources not seen by this (completed) scan are removed.
        """
        root_id = self.root_id(root)
        found = list(scan(root))  # listing only: no transcript is opened
        with self.catalog.transaction() as db:
            generation = self._next_generation(db)
            db.execute("UPDATE roots SET scan_generation = ? WHERE id = ?", (generation, root_id))
            known = {
                row[0]: row[1:]
                for row in db.execute(
                    "SELECT path, id, size, mtime_ns, inode, pending FROM sources"
                )
            }
            for item in found:
                path = str(item.path)
                old = known.get(path)
                st = item.stat
                if old is None:
                    info = FORMATS[item.format].info(item.path)
                    db.execute(
                        "INSERT INTO sources(path, root_id, format, session_id, subagent, "
                        "archived, seen_generation, pending, health) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, 1, 'ok')",
                        (
                            path,
                            root_id,
                            item.format,
                            info.session_id,
                            int(info.subagent),
                            int(info.archived),
                            generation,
                        ),
                    )
                    continue
                source_id, size, mtime_ns, inode, pending = old
                changed = (size, mtime_ns, inode) != (st.size, st.mtime_ns, st.inode)
                db.execute(
                    "UPDATE sources SET seen_generation = ?, pending = ? WHERE id = ?",
                    (generation, 1 if (changed or pending) else 0, source_id),
                )
        self.stats.roots += 1
        self.stats.sources += len(found)
        return root_id

    def complete_scan(self, root_id: int) -> int:
        """After a completed scan: remove sources of this root that were not seen."""
        with self.catalog.transaction() as db:
            generation = db.execute(
                "SELECT scan_generation FROM roots WHERE id = ?", (root_id,)
            ).fetchone()[0]
            gone = [
                row[0]
                for row in db.execute(
                    "SELECT id FROM sources WHERE root_id = ? AND seen_generation < ?",
                    (root_id, generation),
                )
            ]
            for source_id in gone:
                self._delete_rows(db, source_id)
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
        root_ids = [self.scan_root(root) for root in roots]
        self.index_pending(root_ids, progress)
        for root_id in root_ids:
            self.complete_scan(root_id)
        self.stats.seconds += time.perf_counter() - started
        return self.stats

    def pending_sources(self, root_ids: list[int] | None = None) -> list[_Source]:
        sql = (
            "SELECT id, path, format, byte_offset, message_count, inode, signature "
            "FROM sources WHERE pending = 1"
        )
        params: list[Any] = []
        if root_ids is not None:
            sql += f" AND root_id IN ({', '.join('?' for _ in root_ids)})"
            params.extend(root_ids)
        sql += " ORDER BY id"
        return [_Source(*row) for row in self.catalog.db.execute(sql, params)]

    def index_pending(
        self, root_ids: list[int] | None = None, progress: Progress | None = None
    ) -> None:
        sources = self.pending_sources(root_ids)
        sizes = []
        for src in sources:
            try:
                sizes.append(max(0, os.stat(src.path).st_size - src.byte_offset))
            except OSError:
                sizes.append(0)
        total = sum(sizes)
        done = 0
        if progress:
            progress(0, total)
        for src, size in zip(sources, sizes, strict=True):
            self.index_source(src)
            done += size
            if progress:
                progress(done, total)

    def apply_hints(self) -> int:
        """Index the sources the writer hinted at; returns how many were indexed."""
        if self.hints is None:
            return 0
        count = 0
        for path in self.hints.drain():
            row = self.catalog.db.execute(
                "SELECT id, path, format, byte_offset, message_count, inode, signature "
                "FROM sources WHERE path = ?",
                (str(path),),
            ).fetchone()
            if row is None:
                row = self._register_hinted(path)
                if row is None:
                    continue
            self.index_source(_Source(*row))
            count += 1
        return count

    def _register_hinted(self, path: Path) -> tuple[Any, ...] | None:
        """A hinted file under a known root that no scan has seen yet."""
        fmt = format_of(path.name)
        if fmt is None or not path.is_file():
            return None
        roots = self.catalog.db.execute("SELECT id, path FROM roots").fetchall()
        owner = next((rid for rid, rpath in roots if path.is_relative_to(rpath)), None)
        if owner is None:
            return None
        info = FORMATS[fmt].info(path)
        with self.catalog.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO sources(path, root_id, format, session_id, subagent, "
                "archived, pending, health) VALUES (?, ?, ?, ?, ?, ?, 1, 'ok')",
                (str(path), owner, fmt, info.session_id, int(info.subagent), int(info.archived)),
            )
            row = db.execute(
                "SELECT id, path, format, byte_offset, message_count, inode, signature "
                "FROM sources WHERE path = ?",
                (str(path),),
            ).fetchone()
        return tuple(row) if row is not None else None

    def index_source(self, src: _Source) -> None:
        """Bring one source up to date; failures are recorded, never raised."""
        path = Path(src.path)
        try:
            st = FileStat.of(path)
        except FileNotFoundError:
            self._mark(src.id, "missing", None, None)
            self.stats.missing += 1
            return
        except OSError as exc:
            self._mark(src.id, "failed", type(exc).__name__, None)
            self._count_failure(type(exc).__name__)
            return
        rebuild = (
            src.byte_offset == 0
            or src.inode != st.inode
            or st.size < src.byte_offset
            or src.signature != _safe_signature(path, src.byte_offset)
        )
        try:
            self._read(src, path, st, rebuild)
        except (SourceError, OSError, UnicodeError, ValueError, RecursionError, MemoryError) as exc:
            self._mark(src.id, "failed", type(exc).__name__, st)
            self._count_failure(type(exc).__name__)
            return
        self.stats.indexed += 1
        if rebuild:
            self.stats.rebuilt += 1
        else:
            self.stats.appended += 1

    def _read(self, src: _Source, path: Path, st: FileStat, rebuild: bool) -> None:
        fmt = FORMATS[src.format]
        start = ReadResult(0, 0) if rebuild else ReadResult(src.byte_offset, src.message_count)
        result = ReadResult(start.end_offset, start.next_index)
        docs: list[tuple[Any, ...]] = []
        locations: list[tuple[int, int, int, int]] = []
        last_activity: int | None = None
        pending_bytes = 0
        first = True
        errors_seen = 0
        for message in fmt.read(path, result, self.budget):
            if message.index >= MESSAGE_LIMIT:
                raise SourceError(str(path), "too many messages in one session")
            locations.append((src.id, message.index, message.offset, message.length))
            docs.extend(self._rows(src.id, message))
            if message.created_at is not None:
                last_activity = max(last_activity or 0, message.created_at)
            pending_bytes += message.length
            if pending_bytes >= FLUSH_BYTES:
                errors_seen = self._flush(
                    src,
                    path,
                    st,
                    result,
                    docs,
                    locations,
                    rebuild and first,
                    False,
                    last_activity,
                    errors_seen,
                )
                docs, locations, pending_bytes, first = [], [], 0, False
        self._flush(
            src,
            path,
            st,
            result,
            docs,
            locations,
            rebuild and first,
            True,
            last_activity,
            errors_seen,
        )
        self.stats.bytes_read += result.bytes_read

    def _rows(self, source_id: int, message: SourceMessage) -> list[tuple[Any, ...]]:
        rows = []
        for doc in message.documents:
            if doc.part >= PART_LIMIT:
                continue
            rows.append(_doc_row(doc_rowid(source_id, message.index, doc.part), doc))
        return rows

    def _flush(
        self,
        src: _Source,
        path: Path,
        st: FileStat,
        result: ReadResult,
        docs: list[tuple[Any, ...]],
        locations: list[tuple[int, int, int, int]],
        wipe: bool,
        final: bool,
        last_activity: int | None,
        errors_seen: int,
    ) -> int:
        sig = signature(path, result.end_offset)
        new_errors = len(result.errors) - errors_seen
        with self.catalog.transaction() as db:
            if wipe:
                self._delete_rows(db, src.id)
            db.executemany(_INSERT_DOC, docs)
            db.executemany(_INSERT_MESSAGE, locations)
            db.execute(
                "UPDATE sources SET byte_offset = ?, message_count = ?, size = ?, mtime_ns = ?, "
                "inode = ?, signature = ?, pending = ?, health = 'ok', error_class = ?, "
                "line_errors = CASE WHEN ? THEN ? ELSE line_errors + ? END, "
                "last_activity_at = COALESCE(?, last_activity_at, ?), "
                "indexed_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE id = ?",
                (
                    result.end_offset,
                    result.next_index,
                    st.size,
                    st.mtime_ns,
                    st.inode,
                    sig,
                    0 if final else 1,
                    result.errors[-1].error_class if result.errors else None,
                    wipe,
                    new_errors,
                    new_errors,
                    last_activity,
                    st.mtime_ns // 1_000_000,
                    src.id,
                ),
            )
            self.catalog.bump_revision(db)
        self.stats.messages += len(locations)
        self.stats.documents += len(docs)
        self.stats.line_errors += new_errors
        return len(result.errors)

    def _mark(
        self, source_id: int, health: str, error_class: str | None, st: FileStat | None
    ) -> None:
        """A failed or missing source keeps no rows: no fallback to an older checkpoint."""
        with self.catalog.transaction() as db:
            self._delete_rows(db, source_id)
            db.execute(
                "UPDATE sources SET health = ?, error_class = ?, pending = 0, byte_offset = 0, "
                "message_count = 0, signature = NULL, size = ?, mtime_ns = ?, inode = ? "
                "WHERE id = ?",
                (
                    health,
                    error_class,
                    st.size if st else None,
                    st.mtime_ns if st else None,
                    st.inode if st else None,
                    source_id,
                ),
            )
            self.catalog.bump_revision(db)

    def _count_failure(self, error_class: str) -> None:
        self.stats.failed += 1
        self.stats.errors[error_class] = self.stats.errors.get(error_class, 0) + 1

    @staticmethod
    def _delete_rows(db: sqlite3.Connection, source_id: int) -> None:
        low, high = source_rowid_range(source_id)
        db.execute("DELETE FROM documents WHERE rowid BETWEEN ? AND ?", (low, high))
        db.execute("DELETE FROM messages WHERE source_id = ?", (source_id,))


def _doc_row(rowid: int, doc: Document) -> tuple[Any, ...]:
    row: list[Any] = [rowid, None, None, None, None, None]
    row[1 + _KIND_SLOT[doc.kind]] = projection_text(doc.text)
    return tuple(row)


def _safe_signature(path: Path, offset: int) -> bytes | None:
    try:
        return signature(path, offset)
    except OSError:
        return None
