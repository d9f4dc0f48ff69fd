"""The process-local background scheduler (SPEC L9, L5 freshness).

The one owner of a process's background work: one worker thread owns index rebuilds
and listing-metadata work, and the file watcher (``watcher``) it starts and stops
feeds it hints.
Work is per source and coalesced by path. Interactive reads preempt it at batch
boundaries and it resumes afterwards; listing refreshes only defer new work. A scan
keeps its generation across yields, and only a completed scan removes the rows of
sources that vanished. Other processes run their own schedulers on the same catalog
file; SQLite transactions keep them from corrupting each other.

Nothing stops the worker but ``stop``: an unexpected error is logged by its class
(never its content) and the next scan retries; a damaged catalog is quarantined and
rebuilt. ``stop`` ends a run at its next batch boundary (what is committed stays, the
rest stays pending: the next run resumes it) and waits for that only briefly, so that
quitting the picker or ``serve`` while a big history indexes is quick.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from convodex.catalog.db import Catalog, is_corruption
from convodex.catalog.indexer import Indexer
from convodex.catalog.progress import progress
from convodex.catalog.speed.wing import Wing
from convodex.catalog.watcher import Watcher
from convodex.hints import HintQueue
from convodex.models import Event
from convodex.sources.base import Budget

DEFER_SECONDS = 0.05
# How long ``stop`` waits for the run to reach its batch boundary (a commit of at most
# ``indexer.COMMIT_BYTES``); the catalog's lock keeps a close from cutting a commit.
STOP_JOIN_SECONDS = 3.0
log = logging.getLogger("convodex.scheduler")


class Scheduler:
    """Keeps one catalog current for a set of roots, on one background thread."""

    def __init__(
        self,
        catalog: Catalog,
        roots: list[Path],
        *,
        budget: Budget | None = None,
        hints: HintQueue | None = None,
        rescan_seconds: float = 60.0,
        follow_symlinks: bool = False,
        speed: Wing | None = None,
    ) -> None:
        self.catalog = catalog
        self.roots = roots
        self.hints = hints if hints is not None else HintQueue()
        self.indexer = Indexer(catalog, budget, follow_symlinks=follow_symlinks, speed=speed)
        self.follow_symlinks = follow_symlinks
        self.watcher: Watcher | None = None
        self.rescan_seconds = rescan_seconds
        self.listeners: list[Callable[[Event], None]] = []
        self.scans_completed = 0
        self.reason = "idle"
        self.errors = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._scan_requested = threading.Event()
        self._gate = threading.Event()
        self._gate.set()
        self._interactive = 0
        self._lock = threading.Lock()
        self._defer_until = 0.0
        self._last_scan = 0.0
        self.hints.add_waker(self._wake)
        self._thread = threading.Thread(target=self._run, name="convodex-scheduler", daemon=True)

    # -- control ------------------------------------------------------------------

    def start(self, scan: bool = True, watch: bool = False) -> Scheduler:
        """Run: a first scan (``scan``), and the file watcher's hints (``watch``)."""
        if scan:
            self._scan_requested.set()
            self._wake.set()
        self._thread.start()
        if watch:
            self.watcher = Watcher(self, self.follow_symlinks).start()
        return self

    def stop(self) -> bool:
        """End the run at its next batch boundary; whether it ended within the brief
        wait (if not, it ends at that boundary by itself, committing nothing more)."""
        self._stop.set()
        self._gate.set()
        self._wake.set()
        if self.watcher is not None:
            self.watcher.stop()
        if self._thread.is_alive():
            self._thread.join(STOP_JOIN_SECONDS)
        return not self._thread.is_alive()

    @property
    def stopping(self) -> bool:
        """Set by ``stop``: background work gives up at its next step."""
        return self._stop.is_set()

    def request_scan(self) -> None:
        self._scan_requested.set()
        self._wake.set()

    def hint(self, path: str | Path) -> None:
        """A source changed: index it before any other queued work."""
        self.hints.send(path)

    @contextlib.contextmanager
    def interactive(self) -> Iterator[None]:
        """Hold background work at its next batch boundary while a person waits."""
        with self._lock:
            self._interactive += 1
            self._gate.clear()
        try:
            yield
        finally:
            with self._lock:
                self._interactive -= 1
                if self._interactive == 0:
                    self._gate.set()

    def defer(self) -> None:
        """A lightweight refresh: delay new work briefly, never pause running work."""
        self._defer_until = time.monotonic() + DEFER_SECONDS

    # -- the worker ---------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            due = self._last_scan + self.rescan_seconds - time.monotonic()
            self._wake.wait(timeout=max(0.0, due) if self._last_scan else None)
            self._wake.clear()
            if self._stop.is_set():
                break
            generation = self.catalog.generation
            try:
                self.drain_hints()
                if self._scan_requested.is_set() or (
                    self._last_scan and time.monotonic() >= self._last_scan + self.rescan_seconds
                ):
                    self._scan_requested.clear()
                    self._wait_for_deferral()
                    self._scan()
            except Exception as exc:  # never fatal: counted, logged, retried by the next scan
                if self._stop.is_set():
                    break  # stopping: the catalog may be closing under it
                self._failed(exc, generation)
            self.reason = "idle"

    def _failed(self, exc: Exception, generation: int) -> None:
        """After an error in background work: a damaged catalog is rebuilt now; anything
        else waits for the next scan. The log names the error's class, nothing else."""
        self.errors += 1
        self._last_scan = time.monotonic()
        if is_corruption(exc) and self.catalog.recover(generation):
            log.warning("the catalog was damaged: it was moved aside and is being rebuilt")
            self.request_scan()
        else:
            name = type(exc).__name__
            log.warning("background indexing failed (%s); the next scan retries", name)

    def _wait_for_deferral(self) -> None:
        while not self._stop.is_set() and time.monotonic() < self._defer_until:
            time.sleep(self._defer_until - time.monotonic())

    def _boundary(self) -> bool:
        """Between batches: yield to interactive reads, serve hints first; False to stop."""
        self._gate.wait()
        self.drain_hints()
        return not self._stop.is_set()

    def drain_hints(self) -> None:
        """Index the hinted sources now, before any other queued work."""
        paths = self.hints.drain()
        if not paths:
            return
        self.reason = "hint"
        for path in paths:
            src = self.indexer.hinted(Path(path))
            if src is not None:
                self.indexer.index_sources([src])
        self._notify("hint")

    def _scan(self) -> None:
        """A full scan: register, index pending sources, then clean up.

        The indexer commits about every 2 to 8 MiB and stops there for interactive reads
        and hints (a batch boundary); a stopped scan removes nothing.
        """
        self.reason = "scan"
        self.catalog.verify()  # once: damage is found by the first scan, not by a search
        root_ids = [self.indexer.scan_root(root) for root in self.roots if root.is_dir()]
        self._notify("scan")
        self.reason = "index"
        if not self.indexer.index_sources(
            self.indexer.pending_sources(root_ids), between=self._between_batches
        ):
            return  # interrupted: the generation stays open, nothing is removed
        if not self._boundary():
            return
        removed = sum(self.indexer.complete_scan(root_id) for root_id in root_ids)
        if self._stop.is_set():
            return  # the upkeep below is the next run's (a stale band is only unused)
        self.indexer.refresh_bands()
        self.indexer.speed.after_scan(self.catalog, self._stop.is_set)
        self.indexer.release_free_pages()
        self.scans_completed += 1
        self._last_scan = time.monotonic()
        self._notify("removed" if removed else "complete")

    def _between_batches(self) -> bool:
        self._notify("index")
        go_on = self._boundary()
        self.reason = "index"
        return go_on

    def _notify(self, reason: str) -> None:
        if self._stop.is_set():
            return  # nobody waits for news any more (and listeners' work is long)
        state = progress(self.catalog)
        event = Event(
            revision=state.revision,
            indexed=state.indexed,
            total=state.total,
            pending=state.pending,
            failed=state.failed,
            reason=reason,
        )
        for listener in list(self.listeners):
            listener(event)
