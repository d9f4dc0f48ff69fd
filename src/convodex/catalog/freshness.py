"""Fresh by default (SPEC L17): before a CLI search answers, what changed since the
last index is found cheaply and brought in, within a small time budget.

The check is bounded by what the catalog already knows: every known source is
stat'ed (its size, modification time and inode against the indexed ones), and every
directory that holds a known source is listed, with its parents up to the root, so a
new session beside known ones, or in a new directory (Codex starts one a day), is
seen; only new directories are walked. No transcript is read by the check. What it
finds is indexed newest first (each by the path a hint takes), until the budget is
spent; what is left is counted, so the search can say how many recent sessions its
answer may be missing. A catalog that cannot be written (read-only, locked by another
process, a full disk) is answered from as it is, with the reason.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convodex.catalog.db import Catalog, catalog_error
from convodex.catalog.stamps import LISTED_AT, record_listing
from convodex.errors import CatalogError
from convodex.models import Refresh
from convodex.sqlite import marks, sqlite3

# Sources stat'ed (or directory entries seen) between two looks at the clock.
CLOCK_EVERY = 64


class _Found:
    """What the check found: stale known sources and new files, newest first."""

    def __init__(self) -> None:
        self.paths: list[tuple[int, Path]] = []  # (mtime_ns, path)
        self.checked = 0
        self.complete = True
        # Roots listed in full by this check, with when the listing started.
        self.listed: dict[int, int] = {}


def _known(catalog: Catalog, root_ids: Sequence[int] | None) -> list[tuple[Any, ...]]:
    sql = (
        "SELECT s.path, s.format, s.size, s.mtime_ns, s.inode, s.health, s.pending, "
        "s.root_id FROM sources AS s"
    )
    params: list[int] = []
    if root_ids is not None:
        sql += f" WHERE s.root_id IN ({marks(root_ids)})"
        params = list(root_ids)
    return catalog.db.execute(sql, params).fetchall()


def _roots(catalog: Catalog) -> dict[int, tuple[Path, int | None]]:
    """Each root's path and when its directories were last listed in full (ns)."""
    listed = {
        str(key): int(value)
        for key, value in catalog.db.execute(
            "SELECT key, value FROM catalog_meta WHERE key LIKE 'listed_at:%'"
        )
    }
    return {
        int(root_id): (Path(path), listed.get(LISTED_AT.format(root_id)))
        for root_id, path in catalog.db.execute("SELECT id, path FROM roots")
    }


def stale(
    catalog: Catalog, root_ids: Sequence[int] | None, deadline: float, follow: bool = False
) -> _Found:
    """Known sources that changed, vanished or wait to be indexed, and new files in
    the directories of known ones (and new directories below those), by the deadline.

    A directory is listed only when it was modified since its root was last listed in
    full; a known source is stat'ed without importing its reader where its fingerprint
    is its file's stat (``registry.fingerprint``). So a search on a catalog nothing
    changed under costs a stat per source and per directory, and imports nothing."""
    from convodex.sources.base import NotARegularFile
    from convodex.sources.registry import fingerprint

    found = _Found()
    rows = _known(catalog, root_ids)
    known = {str(row[0]) for row in rows}
    dirs: dict[int, set[Path]] = {}
    for n, (path, fmt, size, mtime_ns, inode, health, pending, root_id) in enumerate(rows):
        if n % CLOCK_EVERY == 0 and time.monotonic() > deadline:
            found.complete = False
            return found
        found.checked += 1
        where = Path(str(path))
        dirs.setdefault(int(root_id), set()).add(where.parent)
        try:
            st = fingerprint(str(fmt), where)
        except FileNotFoundError:
            if health != "missing":
                found.paths.append((0, where))  # gone: indexing records it missing
            continue
        except NotARegularFile:
            if health != "failed":
                found.paths.append((0, where))  # a FIFO, a directory now: failed at once
            continue
        except OSError:
            continue  # unreadable now: a full index records why
        if pending or (st.size, st.mtime_ns, st.inode) != (size, mtime_ns, inode):
            found.paths.append((st.mtime_ns, where))
    roots = _roots(catalog)
    for root_id, folders in dirs.items():
        top, listed_at = roots[root_id]
        every = set(folders)
        for folder in folders:
            every.update(p for p in folder.parents if p.is_relative_to(top))
        started = time.time_ns()
        changed = sorted(d for d in every if _modified_since(d, listed_at))
        if changed:
            new = _new_files(top, changed, frozenset(every), known, follow, deadline)
            if new is None:
                found.complete = False
                break
            found.paths.extend(new)
        found.listed[root_id] = started
    found.paths.sort(key=lambda entry: -entry[0])
    return found


def _modified_since(folder: Path, listed_at: int | None) -> bool:
    """Whether a directory may hold entries its root's last full listing did not see."""
    if listed_at is None:
        return True
    try:
        return os.stat(folder).st_mtime_ns >= listed_at
    except OSError:
        return False  # gone: its known sources are stat'ed as gone


def _new_files(
    top: Path,
    changed: list[Path],
    every: frozenset[Path],
    known: set[str],
    follow: bool,
    deadline: float,
) -> list[tuple[int, Path]] | None:
    """Transcripts the catalog does not know in the changed directories and in new
    directories below them (None: the deadline came first)."""
    from convodex.sources.discover import scan_dirs

    out = []
    for seen, item in enumerate(scan_dirs(top, changed, follow, every)):
        if seen % CLOCK_EVERY == 0 and time.monotonic() > deadline:
            return None
        if str(item.path) not in known and item.error is None:
            out.append((item.stat.mtime_ns, item.path))
    return out


def refresh(
    catalog: Catalog,
    roots: Sequence[Path] | None,
    budget_seconds: float,
    follow_symlinks: bool = False,
) -> Refresh:
    """Bring in what changed since the last index (under ``roots``; None: every root
    the catalog holds), newest first, within the budget."""
    from convodex.catalog.progress import root_ids_for

    root_ids = root_ids_for(catalog, roots)
    started = time.monotonic()
    deadline = started + budget_seconds
    found = stale(catalog, root_ids, deadline, follow_symlinks)
    todo = [path for _, path in found.paths]
    result = Refresh(checked=found.checked, stale=len(todo), complete=found.complete)
    if todo and not catalog.writable:
        result.reason = "the catalog is read-only" + (f": {catalog.note}" if catalog.note else "")
    elif todo:
        from convodex.catalog.indexer import Indexer

        try:
            with catalog.without_waiting():  # another writer: leave it for later
                result.brought_in = _bring_in(catalog, todo, deadline, follow_symlinks, Indexer)
        except (sqlite3.Error, OSError) as exc:
            result.reason = _why(catalog, exc)
        except CatalogError as exc:
            result.reason = str(exc)
    result.missing = len(todo) - result.brought_in
    if found.listed and not result.missing and found.complete and catalog.writable:
        with contextlib.suppress(sqlite3.Error, CatalogError):  # kept for the next time
            with catalog.transaction() as db:
                for root_id, at_ns in found.listed.items():
                    record_listing(db, root_id, at_ns)
    result.seconds = round(time.monotonic() - started, 4)
    return result


def _bring_in(
    catalog: Catalog, todo: list[Path], deadline: float, follow: bool, indexer_class: type
) -> int:
    """Index ``todo`` (newest first) until the deadline; how many are done with: now
    current, or recorded as what they are (failed, not a transcript)."""
    indexer = indexer_class(catalog, follow_symlinks=follow)  # no accelerators: small work
    sources = []
    done = 0
    for path in todo:
        if time.monotonic() > deadline:
            break
        src = indexer.hinted(path)
        if src is None:
            done += 1  # nothing to read: recorded as failed, or not a transcript
        else:
            sources.append(src)
    if not sources:
        return done
    indexer.index_sources(sources, between=lambda: time.monotonic() < deadline)
    ids = [src.id for src in sources]
    row = catalog.db.execute(
        f"SELECT count(*) FROM sources WHERE id IN ({marks(ids)}) AND pending = 0", ids
    ).fetchone()
    return done + int(row[0])


def _why(catalog: Catalog, exc: BaseException) -> str:
    """Why the catalog could not take what changed, in a few words."""
    from convodex.catalog.db import is_disk_problem
    from convodex.sqlite import is_busy

    if is_busy(exc):
        return "another process is writing the catalog"
    if is_disk_problem(exc):
        # catalog_error's own words: "the disk is full", "a write failed (…)".
        return str(catalog_error(exc, catalog.path)).split(": the ", 1)[0]
    return f"the catalog could not be written ({type(exc).__name__})"
