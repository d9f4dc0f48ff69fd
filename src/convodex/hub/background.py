"""``convodex serve`` keeping the hub in sync (SPEC S6): ``convodex sync`` every few
minutes, in a thread beside the service, once the first scan has listed the roots.

A run is the same :class:`~convodex.hub.sync.Syncer` as ``convodex sync`` (the same
checkpoints, so a run by hand and the background one never send a session twice and
never run at once). A failed run (the hub unreachable or refusing) is told once, in
one line without the token or anything sent, and retried at the next turn; the
service goes on serving.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from convodex.errors import ConvodexError
from convodex.hub.settings import HubSettings
from convodex.hub.state import SyncBusy
from convodex.hub.sync import Syncer
from convodex.team_models import SyncReport

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService

#: how often the first run looks again whether the first scan is done (seconds)
SCAN_POLL_S = 0.5


class BackgroundSync:
    def __init__(
        self,
        service: HistoryService,
        settings: HubSettings,
        every: float,
        *,
        on_report: Callable[[SyncReport], None] | None = None,
    ) -> None:
        self.service = service
        self.settings = settings
        self.every = every
        self.on_report = on_report
        self.last: SyncReport | None = None
        self.failing = False
        #: runs begun (each a whole ``convodex sync``)
        self.runs = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="convodex-hub-sync", daemon=True)

    def start(self) -> Callable[[], None]:
        """Start syncing; return what stops it."""
        self._thread.start()
        return self.stop

    def stop(self, timeout: float = 30.0) -> None:
        """Stop: a run in progress starts no further session and ends with the ones
        in flight."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._scanned():
            if self._stop.wait(SCAN_POLL_S):
                return
        while not self._stop.is_set():
            self._once()
            if self._stop.wait(self.every):
                return

    def _scanned(self) -> bool:
        try:
            return self.service.tree(progressive=True).listing_state != "scanning"
        except ConvodexError:
            return False

    def _once(self) -> None:
        self.runs += 1
        try:
            # One session at a time: a background sync stays light beside the page.
            report = Syncer(self.service, self.settings, uploads=1, stop=self._stop).run()
        except SyncBusy:
            return  # a sync by hand is running: it does this turn's work
        except ConvodexError as exc:
            if not self.failing:
                print(f"convodex: hub sync: {exc}", file=sys.stderr, flush=True)
            self.failing = True
            return
        if self.failing:
            print(f"convodex: hub sync: {self.settings.url} reached again", file=sys.stderr)
        self.failing = False
        self.last = report
        if self.on_report is not None:
            self.on_report(report)


def with_sync(
    beside: Callable[[HistoryService], Callable[[], None]], settings: HubSettings | None
) -> Callable[[HistoryService], Callable[[], None]]:
    """``beside`` (what starts beside the service and returns what stops it) and, with
    ``settings``, the background sync too."""
    if settings is None or settings.sync_every is None:
        return beside
    every = settings.sync_every

    def start(service: HistoryService) -> Callable[[], None]:
        stop_beside = beside(service)
        stop_sync = BackgroundSync(service, settings, every).start()

        def stop() -> None:
            stop_sync()
            stop_beside()

        return stop

    return start
