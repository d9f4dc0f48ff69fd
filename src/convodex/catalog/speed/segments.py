"""Merged index segments: a session's match count in one seek, not one per segment.

FTS5 writes each flush of its pending terms as a segment and merges them only 16 at a
time (``m001``: cheaper bulk indexing), so a freshly indexed 200 MB history has a
dozen segments. A query bounded to a rowid range (a grouped hit's count of its
session's other matches, a share of ``split``) seeks in every segment, and for a
frequent word that seek walks the segment's doclist: counting the matches of ``the``
in 50 sessions took 66 ms on 12 segments and 0.8 ms on one (210 MB, load 11).

So a service, after a full scan, merges a table's segments once there are more than
``above`` of them, in short steps (``STEP_PAGES`` pages a transaction) that give way
to any other writer and end when the service stops. A merge moves no document, token
or statistic: every answer, score and band stamp stays the same.
"""

from __future__ import annotations

from collections.abc import Callable

from convodex.catalog.db import Catalog

TABLES = ("documents", "outputs")
# Pages a step writes: about a tenth of a second on this machine, so a hint's commit
# waits at most that long behind it.
STEP_PAGES = 256


def segments(catalog: Catalog, table: str) -> int:
    """How many segments ``table`` has (its ``_idx`` rows name their segment)."""
    row = catalog.db.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()
    return int(row[0])


def merge(catalog: Catalog, above: int, stopping: Callable[[], bool]) -> int:
    """Merge each table with more than ``above`` segments into one; the steps taken.
    Another writer's busy error ends it (the next scan goes on from there)."""
    steps = 0
    for table in TABLES:
        if segments(catalog, table) <= above:
            continue
        while not stopping():
            with catalog.without_waiting(), catalog.transaction() as db:
                before = db.total_changes
                # Negative: merge whatever the segments' levels, until one is left.
                merge_sql = f"INSERT INTO {table}({table}, rank) VALUES ('merge', ?)"
                db.execute(merge_sql, (-STEP_PAGES,))
                done = db.total_changes - before < 2  # FTS5: fewer than two, no work left
            steps += 1
            if done:
                break
    return steps
