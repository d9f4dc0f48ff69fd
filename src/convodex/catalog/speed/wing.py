"""The one seam between the core and its accelerators.

The core (search, hydration, indexing) calls these hooks and nothing else of the
speed wing: ``first_page`` (a band's page), ``split`` (a query on several
connections), ``ordered``/``title``/``progress`` (kept results), ``watch_commit`` and
``after_commit`` (bands follow a commit), ``after_run`` (bands rebuilt), ``after_scan``
(a service's index segments merged) and ``reader`` (the index helper process). A hook
that has nothing to add returns None or computes the answer itself, so with
``Accelerators()`` (everything off) the core answers every query alone, the same
answers. Which hooks work is the ``Accelerators`` value
the wing is made with; the service builds it from ``config``.

A wing owns what its accelerators keep (a thread pool, spare connections, caches):
one per service, shared by its threads; ``close`` ends it.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from convodex.catalog.speed.caches import ProgressKept, RankedLists, TitleCache
from convodex.catalog.speed.settings import MAX_SHARES, OFF, Accelerators
from convodex.sqlite import is_busy, sqlite3

if TYPE_CHECKING:
    import concurrent.futures

    from convodex.catalog.batches import Batch, PendingSource
    from convodex.catalog.commits import Changes
    from convodex.catalog.db import Catalog
    from convodex.catalog.plan import Plan, SearchRequest
    from convodex.catalog.rowids import Candidate, Layout
    from convodex.catalog.speed.split import Shares, Spares
    from convodex.models import IndexStats, Progress, SearchPage
    from convodex.sources.base import Budget

Row = tuple[Any, ...]
# A share's SQL and parameters for a rowid range.
Build = Callable[[tuple[int, int]], tuple[str, list[Any]]]


# Kept results keyed by everything they depend on (a catalog file and revision, a
# session file's identity) are the process's: every wing of a warm process (serve,
# the picker, the CLI's commands run in one process) shares them.
RANKED = RankedLists()
TITLES = TitleCache()


class _Workers(Protocol):
    """The search worker pool (``workers.SearchPool``), as the wing uses it."""

    workers: int
    generation: int
    settings: Accelerators

    def search(self, request: SearchRequest) -> SearchPage: ...

    def close(self) -> None: ...


class _Kept:
    """What a wing and its variants (``using``) share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.threads: concurrent.futures.ThreadPoolExecutor | None = None
        self.spares: weakref.WeakKeyDictionary[Catalog, Spares] = weakref.WeakKeyDictionary()
        self.ranked = RANKED
        self.titles = TITLES
        self.progress = ProgressKept()


class Wing:
    """The accelerators one service (a worker, a bench run) uses, behind the hooks."""

    def __init__(self, settings: Accelerators = OFF) -> None:
        self.settings = settings
        self._kept = _Kept()
        self._workers: _Workers | None = None
        self._start: Callable[[Catalog, Accelerators], _Workers] | None = None

    def using(self, **changes: Any) -> Wing:
        """The same wing (its pool, spares, caches) with other settings: a search
        worker's searches split only while it is the pool's only one."""
        other = Wing.__new__(Wing)
        other.settings = msgspec.structs.replace(self.settings, **changes)
        other._kept = self._kept
        other._workers = other._start = None
        return other

    # -- resources ----------------------------------------------------------------

    def shares(self, catalog: Catalog) -> Shares | None:
        """How work on ``catalog`` splits across connections (None: it does not)."""
        parts = self.settings.shares
        if parts <= 1 or catalog.path is None or catalog.mode == "memory":
            return None
        from convodex.catalog.speed.split import Shares, Spares

        kept = self._kept
        with kept.lock:
            if kept.threads is None:
                import concurrent.futures  # 7 ms of start-up: only once a search is split

                kept.threads = concurrent.futures.ThreadPoolExecutor(
                    max_workers=MAX_SHARES - 1, thread_name_prefix="convodex-share"
                )
            spares = kept.spares.get(catalog)
            if spares is None:
                spares = kept.spares[catalog] = Spares()
                catalog.closers.append(spares.close)
            return Shares(catalog, min(parts, MAX_SHARES), kept.threads, spares)

    def start_workers(
        self, catalog: Catalog, pool: Callable[[Catalog, Accelerators], _Workers]
    ) -> None:
        """Start the search worker processes, ``settings.search_workers`` of them, with
        ``pool`` (``workers.SearchPool``: it runs the core's searches, so the core's
        owner hands it in)."""
        if self.settings.search_workers and catalog.path is not None and self._workers is None:
            self._start = pool
            self._workers = pool(catalog, self.settings)

    @property
    def workers(self) -> int:
        """How many search worker processes run (0: searches run in the caller)."""
        return 0 if self._workers is None else self._workers.workers

    def close(self) -> None:
        if self._workers is not None:
            self._workers.close()
            self._workers = None
        kept = self._kept
        with kept.lock:
            threads, kept.threads = kept.threads, None
            spares = list(kept.spares.values())
        for each in spares:
            each.close()
        if threads is not None:
            threads.shutdown(wait=True)

    # -- search hooks -------------------------------------------------------------

    def pooled(self, catalog: Catalog, request: SearchRequest) -> SearchPage | None:
        """A search run by a worker process, or None: the caller runs it. After a
        recovery moved the catalog file, the workers are started on the new one."""
        pool = self._workers
        if pool is None:
            return None
        if pool.generation != catalog.generation and self._start is not None:
            self._workers = self._start(catalog, pool.settings)
            pool.close()
            pool = self._workers
        return pool.search(request)

    def first_page(self, catalog: Catalog, plan: Plan, count: int) -> list[Candidate] | None:
        """The first ``count`` (rank, stored rowid, rank) rows of ``documents`` from the
        word's band, or None: FTS5 ranks them (``bands``)."""
        if not self.settings.bands:
            return None
        from convodex.catalog.speed import bands

        return bands.first(catalog, plan, count)

    def split(
        self, catalog: Catalog, build: Build, count: int | None, layout: Layout
    ) -> list[Row] | None:
        """A candidates query run on disjoint rowid ranges at once and merged, or None:
        the core runs it on its own connection (not split, or a commit landed between
        the shares)."""
        shares = self.shares(catalog)
        if shares is None:
            return None
        from convodex.catalog.speed import split

        with contextlib.suppress(split.SnapshotMoved):
            runs = split.split_query(shares, catalog.revision(), build, layout)
            return split.merged(runs, count)
        return None

    def ordered(
        self, key: tuple[object, ...], rank: Callable[[], list[Candidate]]
    ) -> list[Candidate]:
        """A table's complete ordered candidates: kept per catalog revision and plan."""
        if not self.settings.caches:
            return rank()
        found = self._kept.ranked.get(key)
        if found is None:
            found = rank()
            self._kept.ranked.put(key, found)
        return found

    def title(
        self, path: str, seen: tuple[int, int] | None, read: Callable[[], str | None]
    ) -> str | None:
        """A session file's title, kept while the file's (size, mtime) holds."""
        if not self.settings.caches or seen is None:
            return read()
        return self._kept.titles.get(path, *seen, read)

    def progress(
        self, catalog: Catalog, stamp: tuple[object, ...], count: Callable[[], Progress]
    ) -> Progress:
        """The catalog's progress, kept per connection until anything is committed."""
        if not self.settings.caches:
            return count()
        return self._kept.progress.get(catalog, stamp, count)

    def clear_caches(self) -> None:
        """Forget kept results (a bench's cold run)."""
        self._kept.ranked.clear()

    # -- indexing hooks -----------------------------------------------------------

    def watch_commit(self, db: sqlite3.Connection) -> Changes | None:
        """Inside a commit's transaction, before its writes: what to collect for
        ``after_commit`` (None: nothing follows commits)."""
        if not self.settings.bands:
            return None
        from convodex.catalog.commits import Changes
        from convodex.catalog.speed import bands

        return Changes(before=bands.stamp(db))

    def after_commit(self, catalog: Catalog, changes: Changes | None, revision: int) -> None:
        """After a commit that moved the catalog to ``revision``: bands take in its
        new documents (``bands.follow``)."""
        if changes is None or not self.settings.bands:
            return
        from convodex.catalog.speed import band_upkeep

        _unless_busy(lambda: band_upkeep.follow(catalog, changes.before, revision, changes))

    def after_run(self, catalog: Catalog) -> int:
        """After an indexing run: every frequent word's band brought up to date."""
        if not self.settings.bands:
            return 0
        from convodex.catalog.speed import band_upkeep

        settings = self.settings
        return _unless_busy(
            lambda: band_upkeep.refresh(
                catalog,
                least=settings.band_least_matches,
                most=settings.band_most,
                shares=self.shares(catalog),
            )
        )

    def after_scan(self, catalog: Catalog, stopping: Callable[[], bool]) -> int:
        """After a service's full scan: the index segments merged (``segments``)."""
        if not self.settings.merges:
            return 0
        from convodex.catalog.speed import segments

        above = self.settings.merge_above
        return _unless_busy(lambda: segments.merge(catalog, above, stopping))

    def reader(
        self,
        sources: Sequence[PendingSource],
        total: int,
        sizes: dict[int, int],
        budget: Budget,
        stats: IndexStats,
        group_bytes: int,
    ) -> Generator[tuple[int, Iterable[Batch]], None, None] | None:
        """The run's batches with a helper process reading ahead, or None: the indexer
        reads them itself (no helper, or not worth one for this run)."""
        settings = self.settings
        if not settings.helper_process or total < settings.helper_min_bytes:
            return None
        from convodex.catalog.speed.helper import HelperRead

        return HelperRead(budget, stats, group_bytes).read(list(sources), sizes)


def _unless_busy(work: Callable[[], int]) -> int:
    """Band upkeep or a merge, given up when another process keeps the catalog busy:
    what was indexed is committed, a stale band is only unused (FTS5 ranks that word),
    unmerged segments only slower, and the next run's upkeep takes it up again."""
    try:
        return work()
    except sqlite3.OperationalError as exc:
        if not is_busy(exc):
            raise
        return 0
