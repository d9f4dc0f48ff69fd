"""What an indexing run leaves for the freshness check (``freshness``, SPEC L17) and the
no-op check (``unchanged``, L20): when a root's directories were last listed in full,
and the unchanged-looking sources whose indexed head and tail it re-read (their
signature), a few each run, in turn.

Below both the indexer (which records them) and the freshness check (which reads
them, and runs the indexer), so neither imports the other.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from convodex.catalog import shutdown
from convodex.catalog.db import Catalog
from convodex.sqlite import sqlite3

# catalog_meta key of the time (ns) a root's directories were last listed in full.
LISTED_AT = "listed_at:{}"


# catalog_meta key of the time (ns) a scan of the root began listing every directory
# under it (the no-op check, ``unchanged``; the freshness check lists known ones only).
FULL_LISTING = "full_listing_at:{}"


def record_listing(db: sqlite3.Connection, root_id: int, at_ns: int, full: bool = False) -> None:
    """Note that every directory of the root was listed as of ``at_ns`` (a scan's
    start): a directory not modified since holds no file the catalog does not know.
    ``full``: by a scan, which lists directories that hold no known source too."""
    keys = [LISTED_AT, FULL_LISTING] if full else [LISTED_AT]
    db.executemany(
        "INSERT INTO catalog_meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [(key.format(root_id), str(at_ns)) for key in keys],
    )


# Unchanged-looking sources whose indexed head and tail are re-read per index run:
# at most this many (8 KiB each), the next ones by id each run, round the catalog.
SIGNATURE_CHECKS = 256
VERIFY_CURSOR = "signature_cursor"


def verify_signatures(catalog: Catalog, limit: int = SIGNATURE_CHECKS) -> int:
    """Queue sources whose stat says unchanged but whose indexed head or tail now reads
    differently (an edit in place to the same size with its modification time put
    back: ``touch -r``, ``cp -p``, sync tools). ``limit`` sources a run, in turn, so a
    run costs at most ``limit`` × 8 KiB of reads; returns how many were queued."""
    db = catalog.db
    after = _cursor(catalog)
    sql = (
        "SELECT id, path, byte_offset, signature FROM sources WHERE id > ? AND pending = 0 "
        "AND health = 'ok' AND byte_offset > 0 AND signature IS NOT NULL ORDER BY id LIMIT ?"
    )
    rows = db.execute(sql, (after, limit)).fetchall()
    if len(rows) < limit and after:  # round the catalog: on from the first id
        rows += db.execute(sql, (0, limit - len(rows))).fetchall()
    changed = [
        int(source_id)
        for source_id, path, offset, stored in rows
        if safe_signature(path, int(offset)) not in (bytes(stored), None)
    ]
    if changed:
        with catalog.transaction() as tx:
            tx.executemany(
                "UPDATE sources SET pending = 1, health = 'stale' WHERE id = ?",
                [(i,) for i in changed],
            )
    _move_cursor(catalog, int(rows[-1][0]) if rows else 0)
    return len(changed)


def _cursor_file(catalog: Catalog) -> Path | None:
    """Where a catalog file's cursor is kept: a small file beside its integrity stamps,
    not a row, so a no-op ``index`` writes no transaction (and its close checkpoints
    nothing). Lost or stale (a rebuilt catalog has new ids), the turn starts anew."""
    if catalog.path is None:
        return None
    return shutdown.state_dir(catalog.path) / f"{catalog.path.name}.signatures"


def _cursor(catalog: Catalog) -> int:
    """The id after which the next signatures are read (0: from the first)."""
    path = _cursor_file(catalog)
    try:
        if path is None:  # in memory: the catalog's own table
            row = catalog.db.execute(
                "SELECT value FROM catalog_meta WHERE key = ?", (VERIFY_CURSOR,)
            ).fetchone()
            return int(row[0]) if row else 0
        with open(path, encoding="ascii") as handle:
            return int(handle.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def _move_cursor(catalog: Catalog, last: int) -> None:
    path = _cursor_file(catalog)
    if path is None:
        catalog.db.execute(
            "INSERT INTO catalog_meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (VERIFY_CURSOR, str(last)),
        )
        return
    # Overwritten in place at a fixed width, never truncated: ext4 flushes a file
    # truncated and rewritten when it is closed (milliseconds of every no-op).
    with contextlib.suppress(OSError):  # a read-only state directory: the turn restarts
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.pwrite(fd, f"{last:020d}\n".encode("ascii"), 0)
        finally:
            os.close(fd)


SIGNATURE_WINDOW = 4096


def signature(path: str | os.PathLike[str], offset: int) -> bytes:
    """Fingerprint of the bytes before ``offset``: its first and last 4 KiB and its length.

    Cheap enough to check on every append without rereading the indexed prefix.
    """
    # hashlib's own BLAKE2, without hashlib: importing that loads OpenSSL (a few ms
    # of every no-op ``index``), which BLAKE2 does not need.
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter built without it
        from hashlib import blake2b

    from convodex.sources.base import open_source

    digest = blake2b(offset.to_bytes(8, "little"), digest_size=16)
    with open_source(path) as handle:
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
