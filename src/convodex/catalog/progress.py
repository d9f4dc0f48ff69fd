"""How far the index is (SPEC L9): counts from the catalog alone, and the one sentence
every surface says it with; kept apart from search so that a command that only needs
progress (a no-op ``index``, the scheduler) does not import search's tree."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convodex.catalog.db import Catalog
from convodex.catalog.speed.wing import Wing
from convodex.models import Progress, ProgressState
from convodex.sqlite import marks


def progress(
    catalog: Catalog, root_ids: list[int] | None = None, speed: Wing | None = None
) -> Progress:
    """``{state, indexed, total, pending, failed, revision}`` from the catalog alone.

    Kept per connection until anything is committed, by another connection (``PRAGMA
    data_version``) or by this one (its total changes): every search reports progress,
    and counting every source cost 0.5 of a rare word's 5 ms on 3,244 sources.
    """
    db = catalog.db
    stamp = (
        db.execute("PRAGMA data_version").fetchone()[0],
        db.total_changes,
        catalog.mode,
        None if root_ids is None else tuple(root_ids),
    )
    if speed is None:
        return _count_progress(catalog, root_ids)
    return speed.progress(catalog, stamp, lambda: _count_progress(catalog, root_ids))


def _count_progress(catalog: Catalog, root_ids: list[int] | None) -> Progress:
    where, params = "", []
    if root_ids is not None:
        where = f"WHERE root_id IN ({marks(root_ids)})"
        params = list(root_ids)
    row = catalog.db.execute(
        "SELECT count(*), "
        "coalesce(sum(pending = 1), 0), "
        "coalesce(sum(pending = 0 AND health = 'failed'), 0), "
        "coalesce(sum(pending = 0 AND health IN ('ok', 'stale')), 0) "
        f"FROM sources {where}",
        params,
    ).fetchone()
    total, pending, failed, indexed = (int(v) for v in row)
    scanned_sql = "SELECT count(*) FROM roots WHERE scan_generation > 0"
    scan_params: list[Any] = []
    if root_ids is not None:
        scanned_sql += f" AND id IN ({marks(root_ids)})"
        scan_params = list(root_ids)
    scanned = catalog.db.execute(scanned_sql, scan_params).fetchone()[0]
    state: ProgressState
    if catalog.mode == "degraded":
        state = "degraded"
    elif not scanned:
        state = "empty"
    elif pending:
        state = "indexing"
    else:
        state = "complete"
    return Progress(
        state=state,
        indexed=indexed,
        total=total,
        pending=pending,
        failed=failed,
        revision=catalog.revision(),
    )


def progress_sentence(progress: Progress) -> str:
    """How far the index is, in one sentence: the same words on every surface (the
    CLI's stderr, the MCP tool's first line, the web page), each deciding when to show
    it and what advice to add."""
    if progress.state == "degraded":
        return "index is read-only (degraded mode); results may be stale"
    if progress.total == 0:
        if progress.state == "empty":
            return "the index is empty: the transcript folders have not been scanned yet"
        return "no transcripts were found: there is nothing to search yet"
    if progress.state == "complete":
        sources = "source" if progress.total == 1 else "sources"
        failed = f", {progress.failed} failed" if progress.failed else ""
        return f"index complete: {progress.indexed} of {progress.total} {sources}{failed}"
    return (
        f"index is still building ({progress.indexed}/{progress.total}); results may be incomplete"
    )


def root_ids_for(catalog: Catalog, roots: Sequence[Path] | None) -> list[int] | None:
    if roots is None:
        return None
    ids = []
    for root in roots:
        row = catalog.db.execute("SELECT id FROM roots WHERE path = ?", (str(root),)).fetchone()
        if row is not None:
            ids.append(int(row[0]))
    return ids
