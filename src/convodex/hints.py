"""Path-coalesced freshness hints from the session writer to this process's indexer.

Sending never blocks and never fails the write that sent it: a hint is only a
shortcut; a missed one is caught by the next scan (SPEC L5).
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path


class HintQueue:
    """A set of changed paths; repeated hints for one path coalesce into one."""

    def __init__(self) -> None:
        self._paths: dict[Path, None] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._wakers: list[threading.Event] = []
        self.sent = 0

    def add_waker(self, event: threading.Event) -> None:
        """Also set ``event`` on every hint (a scheduler's wake-up)."""
        self._wakers.append(event)

    def send(self, path: str | Path) -> None:
        with self._lock:
            self._paths[Path(path)] = None
            self.sent += 1
        self._ready.set()
        for event in self._wakers:
            event.set()

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


class HintChannel:
    """Hints from other processes: a Unix datagram socket beside the catalog.

    A writer in another process sends the changed path as one datagram; the
    serving process forwards it to its ``HintQueue``. Sending is fire-and-forget.
    """

    def __init__(self, socket_path: Path, queue: HintQueue) -> None:
        import socket

        self.path = socket_path
        self.queue = queue
        with contextlib.suppress(FileNotFoundError):
            socket_path.unlink()
        socket_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(str(socket_path))
        os.chmod(socket_path, 0o600)
        self._sock.settimeout(0.5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="convodex-hints", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._sock.recv(8192)
            except TimeoutError:
                continue
            except OSError:
                return
            with contextlib.suppress(UnicodeDecodeError):
                self.queue.send(Path(os.fsdecode(data)))

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(2)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def send_datagram(socket_path: Path, path: Path) -> bool:
    """Tell a serving process about ``path``; never blocks, never raises."""
    import socket

    if not socket_path.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.setblocking(False)
            sock.sendto(os.fsencode(path), str(socket_path))
        return True
    except OSError:
        return False
