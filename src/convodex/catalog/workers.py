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
from pathlib import Path

from convodex.catalog import split
from convodex.catalog.db import Catalog, Mode, connect
from convodex.catalog.plan import SearchRequest
from convodex.catalog.search import Searcher
from convodex.models import SearchPage

_searcher: Searcher | None = None


def _open(path: str, mode: Mode) -> None:
    """Worker start: one connection to the catalog for the worker's whole life.

    A worker's search stays on its core: the pool keeps every core busy already.
    """
    global _searcher
    split.ENABLED = False
    catalog = Catalog(connect(path, read_only=mode == "degraded"), Path(path), mode)
    _searcher = Searcher(catalog)


def _search(request: SearchRequest) -> SearchPage:
    assert _searcher is not None, "the worker was not started by SearchPool"
    return _searcher.search(request)


def _ready() -> bool:
    return _searcher is not None


class SearchPool:
    """``workers`` processes answering searches on one catalog file."""

    def __init__(self, catalog: Catalog, workers: int) -> None:
        if catalog.path is None:
            raise ValueError("an in-memory catalog cannot be shared with other processes")
        self._pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_open,
            initargs=(str(catalog.path), catalog.mode),
        )
        self.workers = workers
        # The catalog file the workers opened (a recovery moves it aside).
        self.generation = catalog.generation
        # Start every worker now, so the first searches do not pay for the imports.
        for future in [self._pool.submit(_ready) for _ in range(workers)]:
            future.result()

    def search(self, request: SearchRequest) -> SearchPage:
        return self._pool.submit(_search, request).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
