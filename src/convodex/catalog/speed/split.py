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
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from convodex.catalog.db import Catalog, read_revision
from convodex.sqlite import sqlite3

if TYPE_CHECKING:
    import concurrent.futures

    from convodex.catalog.rowids import Layout

Row = tuple[Any, ...]


class Spares:
    """Idle read connections to one catalog's file, lent to a search's other shares
    between searches and closed with the catalog (``Catalog.closers``)."""

    def __init__(self) -> None:
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    @property
    def idle(self) -> list[sqlite3.Connection]:
        with self._lock:
            return list(self._idle)

    @contextlib.contextmanager
    def lend(self, catalog: Catalog) -> Iterator[sqlite3.Connection]:
        generation = catalog.generation
        with self._lock:
            db = self._idle.pop() if self._idle else None
        if db is None:
            db = catalog.connect_again()
        try:
            yield db
        except sqlite3.Error:
            db.close()  # its state is unknown: not lent again
            raise
        with self._lock:
            if catalog.generation == generation:
                self._idle.append(db)
                return
        db.close()  # to a file recovery has moved aside since

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for db in idle:
            with contextlib.suppress(sqlite3.Error):
                db.close()


class Shares:
    """How one catalog's work is split: ``parts`` ranges, the other ranges on these
    threads, each on a spare connection."""

    def __init__(
        self,
        catalog: Catalog,
        parts: int,
        threads: concurrent.futures.ThreadPoolExecutor,
        spares: Spares,
    ) -> None:
        self.catalog = catalog
        self.parts = parts
        self.threads = threads
        self.spares = spares

    def lend(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self.spares.lend(self.catalog)


class SnapshotMoved(Exception):
    """A commit landed between the shares: their answers are not one snapshot."""


def rowid_ranges(catalog: Catalog, count: int, layout: Layout) -> list[tuple[int, int]]:
    """``count`` disjoint rowid ranges of a table (its ``layout``) covering every row,
    about equal in slots."""
    top = catalog.db.execute("SELECT max(slot) FROM slots").fetchone()[0]
    return layout.shares((int(top) if top is not None else 0) + 1, count)


def _read(db: sqlite3.Connection, revision: int, sql: str, params: Sequence[Any]) -> list[Row]:
    """One share's rows, read in one snapshot that must be ``revision``."""
    db.execute("BEGIN")
    try:
        if read_revision(db) != revision:
            raise SnapshotMoved
        return db.execute(sql, params).fetchall()
    finally:
        db.execute("COMMIT")


def _share(shares: Shares, revision: int, sql: str, params: Sequence[Any]) -> list[Row]:
    with shares.lend() as db:
        return _read(db, revision, sql, params)


def split_query(
    shares: Shares,
    revision: int,
    build: Callable[[tuple[int, int]], tuple[str, list[Any]]],
    layout: Layout,
) -> list[list[Row]]:
    """Each range's rows (``build`` gives a range's SQL and parameters), in range order.

    Raises ``SnapshotMoved`` when the catalog moved on from ``revision`` meanwhile.
    """
    catalog = shares.catalog
    jobs = [build(bounds) for bounds in rowid_ranges(catalog, shares.parts, layout)]
    pool = shares.threads
    futures = [pool.submit(_share, shares, revision, sql, params) for sql, params in jobs[1:]]
    try:
        # The first share on the caller's own connection (one spare fewer a catalog),
        # unless it is inside a transaction of its own.
        if catalog.db.in_transaction:
            first = _share(shares, revision, *jobs[0])
        else:
            first = _read(catalog.db, revision, *jobs[0])
    finally:
        results = [f.result() for f in futures]  # every share ends before this returns
    return [first, *results]


def merged(runs: list[list[Row]], count: int | None) -> list[Row]:
    """Ordered runs merged into one order; the first ``count`` (None: all)."""
    out = list(heapq.merge(*runs))
    return out if count is None else out[:count]
