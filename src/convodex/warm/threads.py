"""A few long-lived daemon threads that run a service's requests in turn.

Why not a thread per request: a service reads its catalog through one connection per
thread (``HistoryService.reader``), kept until the service closes, so a fresh thread
for every hook run or short command opened a connection (three file descriptors)
that nothing ever closed, and read through a cold page cache every time. Daemon
threads, unlike ``concurrent.futures``' workers, never hold up the process's exit
behind a request that hangs.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger("convodex.warm")


class Workers:
    """``count`` threads named ``name-N`` taking calls from one queue until closed."""

    def __init__(self, count: int, name: str) -> None:
        self._calls: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._count = count
        self._closed = False
        for n in range(count):
            threading.Thread(target=self._run, name=f"{name}-{n}", daemon=True).start()

    def submit(self, call: Callable[[], object]) -> None:
        """Run ``call`` on the first free thread (queued while all are busy)."""
        self._calls.put(call)

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            try:
                call()
            except Exception as exc:  # one request's failure never ends a worker
                log.warning("a warm request failed (%s)", type(exc).__name__)

    def close(self) -> None:
        """Each thread ends once the calls queued before this have run."""
        if self._closed:
            return
        self._closed = True
        for _ in range(self._count):
            self._calls.put(None)
