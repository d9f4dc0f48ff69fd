"""Opening the catalog (SPEC L8): private files, WAL, recorded migrations, open policy.

The catalog is a disposable projection; nothing in it is authoritative. So the open
policy prefers answering over failing: a remote or unusable cache directory gets an
in-memory catalog, a corrupt file is renamed aside and rebuilt, and a file written by
a newer build is kept untouched and served read-only ("degraded"). Only a catalog
busy in another process is an error, because waiting is the right answer to it, and
a full disk, which no rebuild can fix.

Damage found later (a search or an index run reading a bad page) goes the same way:
``Catalog.recover`` quarantines the file and reopens by this policy, in place, so
everyone holding the catalog carries on with the new one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import msgspec

from convodex import config
from convodex.catalog import shutdown
from convodex.catalog.files import (
    NOT_WRITABLE,
    private_dir,
    private_files,
    quarantine,
    unusable_reason,
)
from convodex.catalog.migrations import MIGRATIONS
from convodex.errors import CatalogError
from convodex.sqlite import CATALOG_BUSY_TIMEOUT_MS, SQLITE_VERSION, is_busy, sqlite3, transaction
from convodex.text.tokens import TOKENIZER_VERSION

Mode = Literal["disk", "memory", "degraded"]
SCHEMA_VERSION = len(MIGRATIONS)
MIN_SQLITE = (3, 43, 0)  # FTS5 contentless_delete
# What the projection holds beside tokens (marks, message rows); a change rebuilds it.
# 2: tool-name marks and per-message times. 3: spans packed from their batch's first
# offset (``spans.pack``). 4: every row of a sub-agent session carries the sub-agent bit.
# 5: compact rowids in slots (``rowids``). 6: each FTS5 table its own rowid form, and
# spans packed at the narrowest widths.
PROJECTION_VERSION = 6


class Catalog(msgspec.Struct, weakref=True, eq=False):
    """An open catalog connection and how it was opened (one object per connection:
    compared and hashed by identity)."""

    db: sqlite3.Connection
    path: Path | None
    mode: Mode
    lock: threading.RLock = msgspec.field(default_factory=threading.RLock)
    # Held while ``recover`` replaces the file (never across a write transaction): a
    # reader opened or a failure judged meanwhile would see no file, or the old one.
    recovery: threading.Lock = msgspec.field(default_factory=threading.Lock)
    # Why the catalog is not an ordinary disk catalog, or what the open policy did
    # (names and numbers only, safe to print).
    note: str | None = None
    quarantined: Path | None = None
    # Advances each time ``recover`` replaces the file: connections of other threads
    # opened before are to the quarantined file and must reconnect.
    generation: int = 0
    # Whether the file passed a quick check since it was opened (small files on open,
    # others before their first index run: ``verify``).
    checked: bool = False
    # The file's inode when opened: recovery moves only that file aside.
    inode: int | None = None
    # What closes with this connection, and when recovery replaces its file: the
    # accelerators' other connections to it (``speed.split.Spares``).
    closers: list[Callable[[], None]] = msgspec.field(default_factory=list)
    # This process has the file open for writing (``shutdown``): removed on close, a
    # mark left behind tells the next open that this process died with it open.
    mark: shutdown.OpenMark | None = None
    # How long a write waits out another process's (``transaction``); the freshness
    # check of a search sets 0 for its writes: a reader never waits for a writer.
    write_wait: float | None = None
    # Opened without the WAL's shared-memory file (``open_unwritable``): so is every
    # other connection to it (``connect_again``).
    immutable: bool = False

    @property
    def writable(self) -> bool:
        return self.mode != "degraded"

    def connect_again(self) -> sqlite3.Connection:
        """Another connection to this catalog's file, opened the way this one was."""
        return connect(str(self.path), read_only=not self.writable, immutable=self.immutable)

    def require_writable(self) -> None:
        """Refuse a write cleanly in degraded mode, before anything is touched."""
        if not self.writable:
            raise CatalogError(
                f"the catalog at {self.path} is read-only (degraded mode: {self.note}); "
                "it was left untouched"
            )

    def close(self) -> None:
        self.close_others()
        self.db.close()
        if self.mark is not None:
            self.mark.close()

    def close_others(self) -> None:
        """Close the other connections to this file that accelerators keep."""
        for close in self.closers:
            close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; rolls back on any error. Another process's write is
        waited out (it is not corruption), up to ``WRITE_WAIT_SECONDS``."""
        self.require_writable()
        wait = WRITE_WAIT_SECONDS if self.write_wait is None else self.write_wait
        with self.lock, transaction(self.db, wait_seconds=wait) as db:
            yield db

    @contextlib.contextmanager
    def without_waiting(self) -> Iterator[None]:
        """Writes in this block fail at once (busy) when another connection writes,
        instead of waiting it out: for work that is better left for later."""
        with self.lock:
            before = self.db.execute("PRAGMA busy_timeout").fetchone()[0]
            self.write_wait = 0.0
            self.db.execute("PRAGMA busy_timeout = 0")
            try:
                yield
            finally:
                self.write_wait = None
                self.db.execute(f"PRAGMA busy_timeout = {int(before)}")

    def verify(self) -> None:
        """Quick-check a file the open did not when one is due (``shutdown``: never
        checked or replaced since, a writer died with it open, or the periodic one),
        once: damage raises the corruption error ``recover`` answers. Otherwise a
        no-op ``index`` would read every page of the catalog each run."""
        if self.checked or self.path is None or not self.writable:
            return
        with self.lock:
            if shutdown.check_due(self.path) is not None:
                quick_check(self.db, self.path)
            self.checked = True

    def another_reader(self) -> Catalog:
        """A read connection to this file for another thread. The owner opened and
        migrated it, so a plain connection opened as its own was suffices, but never
        while a recovery has the file moved aside (connecting would create an empty one)."""
        with self.recovery:
            db = self.connect_again()
            return Catalog(
                db, self.path, self.mode, generation=self.generation, immutable=self.immutable
            )

    def recover(self, generation: int) -> bool:
        """Quarantine this damaged catalog file and open a new one in its place (L8).

        ``generation`` is the one the caller saw fail; if another thread recovered
        since, this only returns. The file is moved aside only while it is still the
        one this catalog opened (another process may have replaced it already). False
        when there is no file to replace: an in-memory or a newer build's catalog.
        """
        with self.lock, self.recovery:
            if generation != self.generation:
                return True
            if self.path is None or not self.writable:
                return False
            self.close_others()
            with contextlib.suppress(sqlite3.Error):
                self.db.close()
            moved: Path | None = None
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.path).st_ino == self.inode:
                    moved = quarantine(self.path)
            try:
                fresh = _open_disk(self.path, check=True)
            except CatalogError as exc:
                fresh = open_memory_catalog(str(exc))
            self.db, self.path, self.mode = fresh.db, fresh.path, fresh.mode
            self.mark = self.mark or fresh.mark  # one mark a process: the same file
            self.inode = fresh.inode
            self.checked, self.note = fresh.checked, fresh.note
            self.quarantined = fresh.quarantined or moved or self.quarantined
            if moved is not None and fresh.mode == "disk":
                self.note = f"a damaged catalog was moved aside to {moved.name}"
            self.generation += 1
            return True

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM catalog_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def revision(self) -> int:
        return read_revision(self.db)

    def bump_revision(self, db: sqlite3.Connection) -> int:
        """Advance the revision inside the caller's transaction; cursors of older ones go stale."""
        row = db.execute(
            "INSERT INTO catalog_meta(key, value) VALUES ('revision', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 "
            "RETURNING value"
        ).fetchone()
        return int(row[0])


def read_revision(db: sqlite3.Connection) -> int:
    """The catalog revision as ``db`` (this catalog's or another connection to its
    file) reads it."""
    row = db.execute("SELECT value FROM catalog_meta WHERE key = 'revision'").fetchone()
    return int(row[0]) if row and row[0] else 0


def read_schema(db: sqlite3.Connection) -> int:
    """The schema version as ``db`` reads it: through the connection, since the file's
    header lags a WAL not checkpointed yet."""
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def open_current(path: Path) -> Catalog | None:
    """The catalog file as it is, read-only (never created, migrated or checked): None
    when there is no file, or one of another schema than this build's."""
    if not path.is_file():
        return None
    db = connect(str(path), read_only=True)
    try:
        version = read_schema(db)
    except sqlite3.Error:
        db.close()
        raise
    if version != SCHEMA_VERSION:
        db.close()
        return None
    return Catalog(db, path, "degraded")


def recorded_roots(path: Path) -> list[Path]:
    """Roots a catalog file knows, read-only; none when it cannot be read."""
    return _read_roots(path, "SELECT path FROM roots ORDER BY id")


def roots_with_sources(path: Path) -> list[Path]:
    """The recorded roots a catalog file has found a source under, read-only; none
    when it cannot be read (whether the user has sessions there at all)."""
    return _read_roots(
        path,
        "SELECT path FROM roots r WHERE EXISTS (SELECT 1 FROM sources s WHERE s.root_id = r.id)"
        " ORDER BY id",
    )


def _read_roots(path: Path, sql: str) -> list[Path]:
    if not path.is_file():
        return []
    try:
        db = connect(str(path), read_only=True)
    except sqlite3.Error:
        return []
    try:
        return [Path(row[0]) for row in db.execute(sql)]
    except sqlite3.Error:
        return []
    finally:
        db.close()


def connect(target: str, *, read_only: bool = False, immutable: bool = False) -> sqlite3.Connection:
    """``immutable``: read-only, and without the WAL's shared-memory file (on a file
    system that cannot be written SQLite cannot create one)."""
    if SQLITE_VERSION < MIN_SQLITE:
        raise CatalogError(
            f"SQLite {'.'.join(map(str, SQLITE_VERSION))} is too old for the catalog; "
            "install pysqlite3-binary or a Python built with SQLite >= 3.43"
        )
    if read_only or immutable:
        import urllib.parse

        uri = f"file:{urllib.parse.quote(target)}?mode=ro" + ("&immutable=1" if immutable else "")
        db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    else:
        db = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
    db.execute(f"PRAGMA busy_timeout = {CATALOG_BUSY_TIMEOUT_MS}")
    db.execute("PRAGMA foreign_keys = ON")
    return db


def migrate(db: sqlite3.Connection) -> None:
    """Apply the migrations not yet recorded, each in its own transaction."""
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at INTEGER)")
    applied = {row[0] for row in db.execute("SELECT name FROM _migrations")}
    for number, fn in enumerate(MIGRATIONS, start=1):
        if fn.__name__ in applied:
            continue
        with transaction(db):
            fn(db)
            db.execute(
                "INSERT INTO _migrations(name, applied_at) VALUES (?, unixepoch('subsec') * 1000)",
                (fn.__name__,),
            )
            db.execute(f"PRAGMA user_version = {int(number)}")
    _check_tokenizer(db)


def _check_tokenizer(db: sqlite3.Connection) -> None:
    """A different stored tokenizer or projection version wipes the projection and
    queues every source (the catalog is disposable: it is rebuilt from the sources)."""
    stored = dict(
        db.execute(
            "SELECT key, value FROM catalog_meta "
            "WHERE key IN ('tokenizer_version', 'projection_version')"
        ).fetchall()
    )
    wanted = {
        "tokenizer_version": str(TOKENIZER_VERSION),
        "projection_version": str(PROJECTION_VERSION),
    }
    if stored == wanted:
        return
    with transaction(db):
        if stored:
            # FTS5's own command: instant, where DELETE visits every row (0.8 s for the
            # tables of 210 MB of sessions, seconds for a large history).
            db.execute("INSERT INTO documents(documents) VALUES ('delete-all')")
            db.execute("INSERT INTO outputs(outputs) VALUES ('delete-all')")
            db.execute("DELETE FROM spans")
            db.execute("DELETE FROM messages")
            db.execute("DELETE FROM slots")
            db.execute("DELETE FROM bands")
            db.execute("DELETE FROM vectors")
            db.execute("DELETE FROM embedded")
            db.execute(
                "UPDATE sources SET pending = 1, byte_offset = 0, message_count = 0, "
                "unit_count = 0, "
                "signature = NULL, title_index = NULL, first_activity_at = NULL"
            )
        db.executemany(
            "INSERT INTO catalog_meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            list(wanted.items()),
        )


# -- the open policy (L8) ------------------------------------------------------------

# Larger files skip the quick check on open (it reads every page); doctor and
# reindex still check them in full.
QUICK_CHECK_MAX_BYTES = 8 * 1024 * 1024
# How long a writer waits for another process's write transaction before giving up.
WRITE_WAIT_SECONDS = 30.0


def _sqlite_code(exc: BaseException) -> str:
    return str(getattr(exc, "sqlite_errorname", "") or "")


def is_corruption(exc: BaseException) -> bool:
    """SQLite saying the file is damaged or is not a database ("locked" never is)."""
    if not isinstance(exc, sqlite3.DatabaseError) or is_busy(exc):
        return False
    if _sqlite_code(exc).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    text = str(exc).lower()
    return "database disk image is malformed" in text or "file is not a database" in text


# A write that failed for want of room (RLIMIT_FSIZE is "file too large").
_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def is_disk_problem(exc: BaseException) -> bool:
    """A full disk or a failing write: the file is not damaged, and no rebuild helps."""
    if isinstance(exc, OSError):
        return exc.errno in _DISK_FULL_ERRNOS or exc.errno == errno.EIO
    code = _sqlite_code(exc)
    return code.startswith(("SQLITE_FULL", "SQLITE_IOERR")) or (
        "database or disk is full" in str(exc).lower()
    )


def catalog_error(exc: BaseException, path: Path | None) -> CatalogError:
    """One clear sentence for a catalog operation that failed for a reason other than
    damage: names, paths and SQLite's error name only."""
    where = f"the catalog at {path}" if path is not None else "the in-memory catalog"
    name = _sqlite_code(exc) or type(exc).__name__
    if is_busy(exc):
        return CatalogError(f"{where} is locked by another process; try again")
    if is_disk_problem(exc):
        full = name.startswith("SQLITE_FULL") or getattr(exc, "errno", None) in (_DISK_FULL_ERRNOS)
        why = "the disk is full" if full else f"a write failed ({name}: a full or failing disk)"
        return CatalogError(
            f"{why}: {where} could not be written; it was left as it was (the unfinished "
            "write was rolled back). Free some space and run it again"
        )
    return CatalogError(f"{where} could not be used ({name})")


def is_access_problem(exc: BaseException) -> bool:
    """Permission and can't-open errors: the file may be fine; it is just not ours to use."""
    if isinstance(exc, PermissionError):
        return True
    text = str(exc).lower()
    return _sqlite_code(exc).startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM")) or (
        "unable to open" in text or "readonly" in text or "read-only" in text
    )


SQLITE_MAGIC = b"SQLite format 3\x00"


class NewerSchema(Exception):
    """The file's schema is newer than this build's: serve it read-only, never migrate it."""

    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


def stored_user_version(path: Path) -> int:
    """``PRAGMA user_version`` from the file header: no connection, no side files.

    Raises ``sqlite3.DatabaseError`` for a file that is not an SQLite database.
    """
    with open(path, "rb") as handle:
        header = handle.read(100)
    if not header:
        return 0  # an empty file is an empty database to SQLite
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise sqlite3.DatabaseError("file is not a database")
    return int.from_bytes(header[60:64], "big", signed=True)


def _check(db: sqlite3.Connection, pragma: str) -> bool:
    rows = db.execute(f"PRAGMA {pragma}").fetchall()
    return len(rows) == 1 and rows[0][0] == "ok"


def quick_check(db: sqlite3.Connection, path: Path) -> None:
    """Read every page; damage raises the error ``recover`` answers, a sound file is
    stamped (and the marks of writers that died with it open are dropped)."""
    stale = shutdown.unclean(path)
    if not _check(db, "quick_check"):
        raise sqlite3.DatabaseError("database disk image is malformed (quick_check)")
    shutdown.checked(path, stale)


def open_file(path: Path, *, check: bool = False) -> Catalog:
    """Open (creating if needed) a writable catalog file: pragmas, migrations, checks.

    Raises sqlite3 errors as they come and ``NewerSchema`` for a newer file; the
    policy around it is ``open_catalog``'s.
    """
    old_umask = os.umask(0o077)
    try:
        db = connect(str(path))
        try:
            # The header may lag a WAL the newer build has not checkpointed yet.
            version = read_schema(db)
            if version > SCHEMA_VERSION:
                raise NewerSchema(version)
            if not db.execute("PRAGMA page_count").fetchone()[0]:
                # Takes effect on a new file only, and asks for the write lock: on a
                # file another process writes, an open (a search's) would wait for it.
                db.execute("PRAGMA auto_vacuum = INCREMENTAL")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            # A new file is sound; after an unclean shutdown the open checks (L20).
            fresh = int(db.execute("PRAGMA page_count").fetchone()[0]) == 0
            check = check or (not fresh and bool(shutdown.unclean(path)))
            if check:
                quick_check(db, path)
            migrate(db)
            if fresh:
                shutdown.checked(path)
            inode = os.stat(path).st_ino
            mark = shutdown.OpenMark(path)
        except BaseException:
            db.close()
            raise
    finally:
        os.umask(old_umask)
    private_files(path)
    return Catalog(db, path, "disk", checked=check or fresh, inode=inode, mark=mark)


def open_degraded(path: Path, version: int) -> Catalog:
    """A catalog from a newer build: read-only, untouched, searchable as far as it goes."""
    db = connect(str(path), read_only=True)
    note = f"schema {version} is newer than this build's {SCHEMA_VERSION}"
    return Catalog(db, path, "degraded", note=f"{note}: use the newer convodex, or move it aside")


def open_unwritable(path: Path, why: str) -> Catalog | None:
    """The catalog file where this process cannot write (a read-only file system, a
    directory not its own), read-only: answers come from it as it is, and a write is
    refused saying ``why``. None when there is no file of this build's schema."""
    if not path.is_file():
        return None
    for immutable in (False, True):  # without a shared-memory file if none can be made
        try:
            db = connect(str(path), read_only=True, immutable=immutable)
        except sqlite3.Error:
            continue
        try:
            version = read_schema(db)
        except sqlite3.Error:
            db.close()
            continue
        if version != SCHEMA_VERSION:
            db.close()
            return None
        return Catalog(db, path, "degraded", note=why, immutable=immutable)
    return None


def open_catalog(
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    check: bool | None = None,
    mountinfo: str | None = None,
) -> Catalog:
    """Open the catalog under the cache root by the open policy (SPEC L8).

    ``check`` runs ``PRAGMA quick_check`` first (default: for files up to
    ``QUICK_CHECK_MAX_BYTES``); ``mountinfo`` stands in for ``/proc/self/mountinfo``.
    """
    path = config.catalog_path(cache_dir)
    reason = unusable_reason(path.parent, mountinfo)
    if reason is None:
        try:
            private_dir(path.parent)
        except OSError as exc:
            reason = f"the cache directory cannot be created ({type(exc).__name__})"
    if reason == NOT_WRITABLE:
        return open_unwritable(path, reason) or open_memory_catalog(reason)
    if reason is not None:
        return open_memory_catalog(reason)
    if check is None:
        try:
            check = path.stat().st_size <= QUICK_CHECK_MAX_BYTES
        except OSError:
            check = True  # a new file: checking it costs nothing
    if path.exists() and not path.is_file():
        return open_memory_catalog("the catalog path is not a regular file")
    try:
        return _open_disk(path, check)
    except sqlite3.Error as exc:
        raise CatalogError(f"cannot open the catalog at {path}: {type(exc).__name__}") from exc


def _open_disk(path: Path, check: bool) -> Catalog:
    quarantined: Path | None = None
    for attempt in range(2):
        try:
            if path.exists():
                version = stored_user_version(path)
                if version > SCHEMA_VERSION:
                    return open_degraded(path, version)
            try:
                catalog = open_file(path, check=check)
            except NewerSchema as newer:
                return open_degraded(path, newer.version)
            catalog.quarantined = quarantined
            if quarantined is not None:
                catalog.note = f"a damaged catalog was moved aside to {quarantined.name}"
            return catalog
        except (sqlite3.Error, OSError, ValueError) as exc:
            if is_busy(exc):
                raise CatalogError(
                    f"the catalog at {path} is locked by another process; try again"
                ) from exc
            if is_access_problem(exc):
                why = f"the catalog file cannot be opened for writing ({type(exc).__name__})"
                return open_unwritable(path, why) or open_memory_catalog(why)
            if is_disk_problem(exc):
                raise catalog_error(exc, path) from exc
            if attempt or not path.exists():
                raise CatalogError(
                    f"cannot open the catalog at {path}: {type(exc).__name__}"
                ) from exc
            quarantined = quarantine(path)
    raise AssertionError("unreachable")  # pragma: no cover


def open_memory_catalog(note: str | None = None) -> Catalog:
    db = connect(":memory:")
    migrate(db)
    return Catalog(db, None, "memory", note=note, checked=True)
