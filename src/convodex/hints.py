"""Path-coalesced freshness hints from the session writer to this process's indexer.

Sending never blocks and never fails the write that sent it: a hint is only a
shortcut; a missed one is caught by the next scan (SPEC L5).
"""

from __future__ import annotations

import threading
from pathlib import Path


class HintQueue:
    """A set of changed paths; repeated hints for one path coalesce into one."""

    def __init__(self) -> None:
        self._paths: dict[Path, None] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.sent = 0

    def send(self, path: str | Path) -> None:
        with self._lock:
            self._paths[Path(path)] = None
            self.sent += 1
        self._ready.set()

    def drain(self) -> list[Path]:
        with self._lock:
            paths = list(self._paths)
            self._paths.clear()
            self._ready.clear()
        return paths

    def wait(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def __len__(self) -> int:
        with self._lock:
            return len(self._paths)
