"""Operations on the catalogs (SPEC L11): a read-only doctor and a safe rebuild.

Both report names, paths, counts and error classes only: never queries, tokens,
snippets, message text, tool arguments or provider content.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

import msgspec

from convodex import config
from convodex.catalog.db import (
    SCHEMA_VERSION,
    connect,
    open_file,
    open_unwritable,
    read_revision,
    stored_user_version,
)
from convodex.catalog.failures import failed_sources
from convodex.catalog.files import (
    NOT_WRITABLE,
    QUARANTINE_MARK,
    REBUILD_MARK,
    private_dir,
    quarantined_files,
    remove_with_side_files,
    replace_catalog,
    side_files,
    unusable_reason,
)
from convodex.catalog.indexer import Indexer
from convodex.catalog.progress import progress
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing
from convodex.catalog.vectors import pending_sources
from convodex.errors import CatalogError
from convodex.models import CatalogReport, QuarantinedFile, ReindexReport, UnknownShape
from convodex.sources.base import Budget
from convodex.sqlite import is_busy, sqlite3

HEALTHS = ("ok", "stale", "failed", "missing")


def _size(path: Path) -> int:
    total = 0
    for file in [path, *side_files(path)]:
        with contextlib.suppress(OSError):
            total += file.stat().st_size
    return total


def _quarantine_report(path: Path) -> list[QuarantinedFile]:
    out = []
    for file in quarantined_files(path):
        stamp = file.name.rsplit(QUARANTINE_MARK, 1)[-1]
        out.append(
            QuarantinedFile(
                path=str(file),
                size_bytes=_size(file),
                quarantined_at=int(stamp) if stamp.isdigit() else None,
            )
        )
    return out


def doctor_history(
    cache_dir: str | os.PathLike[str] | None = None, mountinfo: str | None = None
) -> CatalogReport:
    """The history catalog's state, read-only: never creates, migrates or repairs a file."""
    path = config.catalog_path(cache_dir)
    report = CatalogReport(
        name="history",
        path=str(path),
        exists=path.is_file(),
        mode="disk",
        schema=None,
        supported_schema=SCHEMA_VERSION,
        integrity=None,
        size_bytes=_size(path),
        sources=dict.fromkeys(HEALTHS, 0),
        pending=0,
        line_errors=0,
        error_classes={},
        revision=None,
        quarantined=_quarantine_report(path),
        note=None,
    )
    reason = unusable_reason(path.parent, mountinfo)
    unwritable = reason == NOT_WRITABLE and report.exists
    if reason is not None and not unwritable:
        report.mode, report.note = "memory", f"{reason}: catalogs live in memory only"
        return report
    if not report.exists:
        report.integrity = "missing"
        report.note = "no catalog yet: `convodex index` creates it"
        return report
    try:
        if unwritable:  # searches answer from it as it is (``open_unwritable``)
            report.mode, report.note = "degraded", f"{reason}: read as it is, never written"
            kept = open_unwritable(path, NOT_WRITABLE)
            if kept is None:
                raise sqlite3.OperationalError("not a catalog of this build's schema")
            db = kept.db
        else:
            db = connect(str(path), read_only=True)
    except sqlite3.Error as exc:
        report.integrity, report.note = "unreadable", f"cannot open: {type(exc).__name__}"
        return report
    try:
        _inspect(db, report)
    except sqlite3.Error as exc:
        if is_busy(exc):
            report.integrity, report.note = "busy", "locked by another process; try again"
        else:
            report.integrity, report.note = "unreadable", f"cannot read: {type(exc).__name__}"
    finally:
        db.close()
    return report


def _inspect(db: sqlite3.Connection, report: CatalogReport) -> None:
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    report.schema = version
    if version > SCHEMA_VERSION:
        report.mode = "degraded"
        report.note = (
            f"schema {version} is newer than this build's {SCHEMA_VERSION}: "
            "served read-only and left untouched"
        )
    rows = db.execute("PRAGMA integrity_check").fetchall()
    report.integrity = "ok" if [tuple(r) for r in rows] == [("ok",)] else "failed"
    if report.integrity != "ok":
        report.note = (
            f"{len(rows)} integrity problems: run `convodex catalogs reindex history` "
            "to rebuild it (the session files are not affected)"
        )
        return
    for health, count in db.execute("SELECT health, count(*) FROM sources GROUP BY health"):
        report.sources[str(health)] = int(count)
    pending, line_errors = db.execute(
        "SELECT coalesce(sum(pending), 0), coalesce(sum(line_errors), 0) FROM sources"
    ).fetchone()
    report.pending, report.line_errors = int(pending), int(line_errors)
    report.error_classes = {
        str(name): int(count)
        for name, count in db.execute(
            "SELECT error_class, count(*) FROM sources WHERE health = 'failed' "
            "AND error_class IS NOT NULL GROUP BY error_class ORDER BY error_class"
        )
    }
    report.failed = failed_sources(db)
    report.empty_by_format = {
        str(fmt): int(count)
        for fmt, count in db.execute(
            "SELECT format, count(*) FROM sources WHERE health = 'ok' AND pending = 0"
            " AND message_count = 0 AND size > 0 GROUP BY format ORDER BY format"
        )
    }
    report.unknown_shapes = unknown_shapes(db)
    report.revision = read_revision(db)
    with contextlib.suppress(sqlite3.OperationalError):  # a catalog of an older schema
        report.vectors = int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])
        model = db.execute("SELECT value FROM catalog_meta WHERE key = 'embedding_model'")
        report.embedding_model = next((str(r[0]) for r in model), None)
        if report.embedding_model is not None:  # embeddings were ever computed here
            report.embedding_pending = len(pending_sources(db))


def unknown_shapes(db: sqlite3.Connection) -> list[UnknownShape]:
    """The unknown record and block types of healthy sources, summed per format and
    name, each with its first source as the example (``sources.drift``)."""
    columns = {str(row[1]) for row in db.execute("PRAGMA table_info(sources)")}
    if "unknown_shapes" not in columns:  # an older schema, read as it is
        return []
    found: dict[tuple[str, str], UnknownShape] = {}
    rows = db.execute(
        "SELECT format, path, unknown_shapes FROM sources"
        " WHERE unknown_shapes IS NOT NULL AND health = 'ok' ORDER BY id"
    )
    for fmt, path, stored in rows:
        for key, count in unknown_counts(stored).items():
            kind, _, name = key.partition(":")
            shape = found.get((str(fmt), key))
            if shape is None:
                shape = UnknownShape(str(fmt), kind, name, 0, 0, str(path))
                found[(str(fmt), key)] = shape
            shape.count += count
            shape.sources += 1
    return sorted(found.values(), key=lambda s: (s.format, -s.count, s.kind, s.name))


def unknown_counts(stored: str | None) -> dict[str, int]:
    """A stored ``unknown_shapes`` value's counts; a damaged one counts as none."""
    if not stored:
        return {}
    try:
        return _decode_counts(stored)
    except msgspec.DecodeError:
        return {}


_decode_counts = msgspec.json.Decoder(dict[str, int]).decode


def doctor_catalogs(
    cache_dir: str | os.PathLike[str] | None = None, mountinfo: str | None = None
) -> list[CatalogReport]:
    """Every local catalog's report (today: the history search catalog)."""
    return [doctor_history(cache_dir, mountinfo)]


def reindex_history(
    roots: Iterable[Path],
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    budget: Budget | None = None,
    mountinfo: str | None = None,
    accelerators: Accelerators | None = None,
) -> ReindexReport:
    """Rebuild the history catalog from ``roots`` into a new file, then swap it in.

    The old catalog serves searches until the swap and stays as it was if the
    rebuild fails. A catalog from a newer build is refused, never replaced.
    ``accelerators``: default ``Accelerators.from_config`` (the helper process, bands).
    """
    path = config.catalog_path(cache_dir)
    reason = unusable_reason(path.parent, mountinfo)
    if reason is not None:
        raise CatalogError(f"cannot rebuild the catalog on disk: {reason}")
    root_list = list(dict.fromkeys(roots))
    if path.exists():
        try:
            version = stored_user_version(path)
        except (sqlite3.Error, OSError):
            version = 0  # damaged or not a file: the rebuild replaces it
        if version > SCHEMA_VERSION:
            raise CatalogError(
                f"the catalog at {path} has schema {version}, newer than this build's "
                f"{SCHEMA_VERSION}; it was left untouched"
            )
    try:
        private_dir(path.parent)
    except OSError as exc:
        raise CatalogError(f"cannot create the cache directory ({type(exc).__name__})") from exc
    new = path.with_name(f"{path.name}{REBUILD_MARK}{os.getpid()}")
    remove_with_side_files(new)
    try:
        catalog = open_file(new)
        speed = Wing(accelerators or Accelerators.from_config())
        try:
            indexer = Indexer(catalog, budget, speed=speed)
            stats = indexer.run([r for r in root_list if r.is_dir()])
            state = progress(catalog)
            failed = failed_sources(catalog.db)
            catalog.db.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
        finally:
            speed.close()
            catalog.close()
        replaced = path.exists()
        replace_catalog(new, path)
    except Exception as exc:
        remove_with_side_files(new)
        if isinstance(exc, CatalogError):
            raise
        raise CatalogError(
            f"the rebuild failed ({type(exc).__name__}); the old catalog was kept"
        ) from exc
    except BaseException:
        remove_with_side_files(new)
        raise
    return ReindexReport(
        name="history",
        path=str(path),
        replaced=replaced,
        roots=[str(r) for r in root_list],
        stats=stats,
        progress=state,
        failed=failed,
    )
