"""The index helper process: reading and tokenizing in a second process while this
one commits (two cores), with file-locked claims so this process reads a small source
itself whenever it would otherwise wait.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import struct
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING

from convodex.catalog.batches import Batch, PendingSource, SourceReader
from convodex.models import IndexStats
from convodex.sources.base import Budget

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

# What a helper's receive or send raises once the indexing process it serves is gone.
PARENT_GONE = (EOFError, OSError)


class Claims:
    """Which sources are taken: a counter in a file both processes lock, so the
    indexing process reads a small source itself whenever it would otherwise wait for
    the helper, and the helper skips it.

    Sources are claimed in order (the helper one at a time, as it reads), so every
    source is read once and the commits keep their order: newest first, and the
    rowids (tie order) those of a single process. The helper opens the file by its
    path, like the channel's address: never an inherited descriptor.
    """

    _COUNTER = struct.Struct("<q")

    def __init__(self, path: str, create: bool = False) -> None:
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        self.fd = os.open(path, flags, 0o600)
        if create:
            os.pwrite(self.fd, self._COUNTER.pack(0), 0)

    def claim(self, count: int, allow: Callable[[int], bool] | None = None) -> int | None:
        """The next unclaimed source's place, now taken; None when all are taken (or
        the next one is not ``allow``ed)."""
        fcntl.lockf(self.fd, fcntl.LOCK_EX)
        try:
            (place,) = self._COUNTER.unpack(os.pread(self.fd, self._COUNTER.size, 0))
            if place >= count or (allow is not None and not allow(place)):
                return None
            os.pwrite(self.fd, self._COUNTER.pack(place + 1), 0)
            return int(place)
        finally:
            fcntl.lockf(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self.fd)


class HelperChannel:
    """Where an index helper connects back to its parent: a Unix socket in a private
    temporary directory.

    The helper is handed only this address, never an open descriptor: multiprocessing
    would pass one through the parent (its resource sharer), and a helper starting
    while its parent is killed would then die in the middle of its start-up, traceback
    and all. Connecting, it finds the parent gone and exits quietly instead.
    """

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="convodex-helper-")
        self.address = os.path.join(self._folder.name, "helper.sock")
        self.claims_path = os.path.join(self._folder.name, "claims")
        self.claims = Claims(self.claims_path, create=True)
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.address)
        self._server.listen(1)

    def accept(self, alive: Callable[[], bool], poll: float = 0.5) -> Connection | None:
        """The helper's connection, or ``None`` once it is no longer alive."""
        self._server.settimeout(poll)
        while True:
            try:
                sock, _ = self._server.accept()
            except TimeoutError:
                if alive():
                    continue
                return None
            sock.setblocking(True)
            # Connected: the address has done its job. Removing it now leaves nothing
            # behind in the temporary folder even if this process is killed later.
            self._folder.cleanup()
            return _connection(sock)

    def close(self) -> None:
        self._server.close()
        self.claims.close()
        self._folder.cleanup()

    def __enter__(self) -> HelperChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connection(sock: socket.socket) -> Connection:
    from multiprocessing.connection import Connection

    return Connection(sock.detach())


def read_in_helper(address: str, claims_path: str, budget: Budget, group_bytes: int) -> None:
    """Helper-process entry point: the sources the parent sends, each one it claims
    (``Claims``) read into batches and sent back in groups of about ``group_bytes``
    (the first ones smaller: the parent's first commits wait for them), each as
    (its sources' batches, what reading them counted, whether it is the last).

    The parent receives on its own thread, only when it wants the next group, so no
    thread of the parent competes with its SQLite inserts for the GIL; the socket keeps
    the helper one group ahead: it reads group N+1 while the parent commits group N.

    The parent decides when to stop: an interrupt is its to handle, and once it is gone
    (killed, out of memory) the next receive or send fails and the helper exits
    quietly; the parent reads whatever the helper did not deliver itself.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        claims = Claims(claims_path)  # before connecting: connected, the path is gone
    except OSError:
        return  # the parent is gone already
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(address)
    except OSError:
        claims.close()
        return
    conn = _connection(sock)
    reader = SourceReader(budget)
    try:
        sources: list[PendingSource] = conn.recv()
        group: list[tuple[int, list[Batch]]] = []
        size, limit = 0, max(1, group_bytes // 8)
        while (place := claims.claim(len(sources))) is not None:
            src = sources[place]
            batches = list(reader.batches(src))
            group.append((src.id, batches))
            size += sum(b.size for b in batches)
            if size >= limit:
                # Each group carries what reading it counted: a helper that dies
                # later leaves the counts of what it delivered.
                conn.send((group, reader.stats, False))
                group, size, reader.stats = [], 0, IndexStats()
                limit = min(2 * limit, group_bytes)
        conn.send((group, reader.stats, True))
    except PARENT_GONE:
        pass
    finally:
        claims.close()
        with contextlib.suppress(OSError):
            conn.close()
