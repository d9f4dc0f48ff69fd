"""The file watcher (SPEC L9): external writers' changes become the scheduler's hints.

The scheduler owns it (``Scheduler.start(watch=True)`` starts it, ``stop`` ends it), so
one owner starts and stops all of a process's background work. A change to a
transcript under a root, by the same rules as a scan of that root (format and all),
is a hint; a deletion or a new directory asks for a scan (files written into a
directory before it was watched are found by the scan, and a scan removes sources).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import Protocol

log = logging.getLogger("convodex.watcher")
JOIN_SECONDS = 5.0


class Hinted(Protocol):
    """What the watcher feeds (the scheduler): its roots, hints and scan requests."""

    roots: list[Path]

    def hint(self, path: str | Path) -> None: ...

    def request_scan(self) -> None: ...


class Watcher:
    """One thread watching a scheduler's roots until ``stop``."""

    def __init__(self, scheduler: Hinted, follow_symlinks: bool) -> None:
        self.scheduler = scheduler
        self.follow_symlinks = follow_symlinks
        self.watching = threading.Event()  # set once the watcher is running
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="convodex-watch", daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(JOIN_SECONDS)

    def _run(self) -> None:
        import watchfiles

        roots = [r for r in self.scheduler.roots if r.is_dir()]
        if not roots:
            return
        # The watcher yields an empty set on each timeout: the first one says it runs.
        for changes in watchfiles.watch(
            *map(str, roots),
            stop_event=self._stop,
            debounce=50,
            step=20,
            rust_timeout=200,
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            self.watching.set()
            for change, path in changes:
                try:
                    self.changed(Path(path), change == watchfiles.Change.deleted)
                except Exception as exc:  # one odd file never stops the watcher
                    log.warning("the file watcher skipped a change (%s)", type(exc).__name__)

    def changed(self, path: Path, deleted: bool) -> None:
        """One change: a transcript's becomes a hint; a deletion or a new directory, a
        scan."""
        from convodex.sources.discover import SCANNED_SUFFIXES, SOURCE_NAMES, discover_file
        from convodex.sources.roots import root_format

        scheduler = self.scheduler
        if not path.name.endswith(SCANNED_SUFFIXES) and path.name not in SOURCE_NAMES:
            if not deleted and not path.is_symlink() and path.is_dir():
                scheduler.request_scan()  # its files may have come before its watch did
            return
        if deleted:
            scheduler.request_scan()
            return
        owners = [root for root in scheduler.roots if path.is_relative_to(root)]
        if not owners:
            return
        root = max(owners, key=lambda r: len(r.parts))
        with contextlib.suppress(FileNotFoundError):  # gone again: the next change says so
            if discover_file(path, root, root_format(root), self.follow_symlinks) is not None:
                scheduler.hint(path)
