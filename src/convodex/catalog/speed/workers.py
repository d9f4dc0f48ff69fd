"""Search worker processes: a serving process's searches on every core.

Ranking runs inside SQLite, but choosing hits, reading their messages from the
sources and building snippets is Python, bound to one interpreter lock. A serving
process therefore hands searches to a small pool of worker processes, each with its
own read connection to the same catalog file (WAL lets them read while the
scheduler writes). The serving process keeps the scheduler, the HTTP loop and the
runtime overlay; a worker returns plain result models.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import threading
from pathlib import Path

import msgspec

from convodex.catalog.db import Catalog, Mode, connect
from convodex.catalog.plan import SearchRequest
from convodex.catalog.search import Searcher
from convodex.catalog.speed.children import leave_signals_to_parent, starting_children
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing
from convodex.models import SearchPage

# The worker's searchers: alone (split across the cores) and under load (not split).
_searchers: tuple[Searcher, Searcher] | None = None


def _open(path: str, mode: Mode, immutable: bool, settings: Accelerators) -> None:
    """Worker start: one connection to the catalog for the worker's whole life, and
    the serving process's accelerators but the workers themselves. The serving
    process decides when its workers stop (``children``)."""
    global _searchers
    leave_signals_to_parent()
    db = connect(path, read_only=mode == "degraded", immutable=immutable)
    catalog = Catalog(db, Path(path), mode, immutable=immutable)
    speed = Wing(msgspec.structs.replace(settings, search_workers=0))
    _searchers = (Searcher(catalog, speed=speed), Searcher(catalog, speed=speed.using(shares=1)))


def _search(request: SearchRequest, alone: bool) -> SearchPage:
    """One search; split across the cores (``split``) only when it is the pool's only
    one: under load the other workers keep the cores busy already."""
    assert _searchers is not None, "the worker was not started by SearchPool"
    return _searchers[0 if alone else 1].search(request)


def _ready() -> bool:
    return _searchers is not None


class SearchPool:
    """``settings.search_workers`` processes answering searches on one catalog file."""

    def __init__(self, catalog: Catalog, settings: Accelerators) -> None:
        if catalog.path is None:
            raise ValueError("an in-memory catalog cannot be shared with other processes")
        workers = settings.search_workers
        self._pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_open,
            initargs=(str(catalog.path), catalog.mode, catalog.immutable, settings),
        )
        self.settings = settings
        self.workers = workers
        # Searches in flight: one alone may use every core.
        self._running = 0
        self._lock = threading.Lock()
        # The catalog file the workers opened (a recovery moves it aside).
        self.generation = catalog.generation
        # Start every worker now, so the first searches do not pay for the imports.
        with starting_children():
            started = [self._pool.submit(_ready) for _ in range(workers)]
        for future in started:
            future.result()

    def search(self, request: SearchRequest) -> SearchPage:
        with self._lock:
            alone = self._running == 0
            self._running += 1
        try:
            return self._pool.submit(_search, request, alone).result()
        finally:
            with self._lock:
                self._running -= 1

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
