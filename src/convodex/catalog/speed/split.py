"""One search on every core: the candidates query runs on disjoint rowid ranges at once.

BM25 over a common word is SQLite work proportional to its matches (60,000 rows of a
210 MB history: ~50 ms on one core), and SQLite releases the interpreter lock while
it works. So a search (in the CLI, the picker, the MCP tool, ``serve``) asks each core
for the best candidates of its share of the rowids, the first share on its own
connection and each other one on a spare read connection, and merges the ordered
answers. Scores are exact either way: BM25's statistics are the whole table's.

Each share reads in a transaction that checks the catalog revision, so the shares
come from one snapshot; if a commit lands between them, the caller asks again on its
own connection. ``serve``'s search workers split a search only while it is the pool's
only one (``workers``): under load the other workers keep the cores busy already.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from convodex import config
from convodex.catalog.db import Catalog, connect, read_revision
from convodex.sqlite import sqlite3

if TYPE_CHECKING:
    import concurrent.futures

# Shares beyond the cores only wait (``config.SEARCH_SHARES``: four at most).
MAX_SHARES = 4
ENABLED = True

Row = tuple[Any, ...]


def usable_cpus() -> int:
    """The CPUs this process may run on (``taskset`` and cgroups narrow them)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def shares(catalog: Catalog) -> int:
    """How many ranges a search on this catalog is split into (1: not split)."""
    if not ENABLED or catalog.path is None or catalog.mode == "memory":
        return 1
    wanted = min(MAX_SHARES, config.SEARCH_SHARES.value())
    return max(1, min(wanted, usable_cpus()))


_LOCK = threading.Lock()
_THREADS: concurrent.futures.ThreadPoolExecutor | None = None


def threads() -> concurrent.futures.ThreadPoolExecutor:
    global _THREADS
    with _LOCK:
        if _THREADS is None:
            import concurrent.futures  # 7 ms of start-up: only once a search is split

            _THREADS = concurrent.futures.ThreadPoolExecutor(
                max_workers=MAX_SHARES - 1, thread_name_prefix="convodex-share"
            )
        return _THREADS


@contextlib.contextmanager
def lend(catalog: Catalog) -> Iterator[sqlite3.Connection]:
    """A spare read connection to the catalog's file, kept by the catalog between
    searches and closed with it."""
    generation = catalog.generation
    with _LOCK:
        db = catalog.spares.pop() if catalog.spares else None
    if db is None:
        db = connect(str(catalog.path), read_only=catalog.mode == "degraded")
    try:
        yield db
    except sqlite3.Error:
        db.close()  # its state is unknown: not lent again
        raise
    with _LOCK:
        if catalog.generation == generation:
            catalog.spares.append(db)
            return
    db.close()  # to a file recovery has moved aside since


class SnapshotMoved(Exception):
    """A commit landed between the shares: their answers are not one snapshot."""


def rowid_ranges(catalog: Catalog, count: int, shift: int) -> list[tuple[int, int]]:
    """``count`` disjoint rowid ranges covering every row, about equal in slots (of
    rowids whose slot is ``rowid >> shift``)."""
    top = catalog.db.execute("SELECT max(slot) FROM slots").fetchone()[0]
    slots = (int(top) if top is not None else 0) + 1
    step = -(-slots // count)
    edges = [min(slots, i * step) << shift for i in range(count)] + [2**63]
    return [(edges[i], edges[i + 1] - 1) for i in range(count) if edges[i] < edges[i + 1]]


def _read(db: sqlite3.Connection, revision: int, sql: str, params: Sequence[Any]) -> list[Row]:
    """One share's rows, read in one snapshot that must be ``revision``."""
    db.execute("BEGIN")
    try:
        if read_revision(db) != revision:
            raise SnapshotMoved
        return db.execute(sql, params).fetchall()
    finally:
        db.execute("COMMIT")


def _share(catalog: Catalog, revision: int, sql: str, params: Sequence[Any]) -> list[Row]:
    with lend(catalog) as db:
        return _read(db, revision, sql, params)


def split_query(
    catalog: Catalog,
    revision: int,
    build: Callable[[tuple[int, int]], tuple[str, list[Any]]],
    parts: int,
    shift: int,
) -> list[list[Row]]:
    """Each range's rows (``build`` gives a range's SQL and parameters), in range order.

    Raises ``SnapshotMoved`` when the catalog moved on from ``revision`` meanwhile.
    """
    jobs = [build(bounds) for bounds in rowid_ranges(catalog, parts, shift)]
    pool = threads()
    futures = [pool.submit(_share, catalog, revision, sql, params) for sql, params in jobs[1:]]
    try:
        # The first share on the caller's own connection (one spare fewer a catalog),
        # unless it is inside a transaction of its own.
        if catalog.db.in_transaction:
            first = _share(catalog, revision, *jobs[0])
        else:
            first = _read(catalog.db, revision, *jobs[0])
    finally:
        results = [f.result() for f in futures]  # every share ends before this returns
    return [first, *results]


def merged(runs: list[list[Row]], count: int | None) -> list[Row]:
    """Ordered runs merged into one order; the first ``count`` (None: all)."""
    out = list(heapq.merge(*runs))
    return out if count is None else out[:count]
