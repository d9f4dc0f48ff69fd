"""The index helper process: reading and tokenizing in a second process while this
one commits (two cores), with file-locked claims so this process reads a small source
itself whenever it would otherwise wait.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import multiprocessing.connection
import os
import socket
import struct
import tempfile
from collections.abc import Callable, Generator, Iterable
from typing import TYPE_CHECKING

from convodex.catalog.batches import Batch, PendingSource, SourceReader
from convodex.catalog.speed.children import leave_signals_to_parent, starting_children
from convodex.models import IndexStats
from convodex.sources.base import Budget

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

# Sources larger than this are read by the indexing process: small ones travel whole
# (when a helper runs at all: ``settings.HELPER_MIN_BYTES``, ``HELPER_MIN_CPUS``).
HELPER_MAX_SOURCE_BYTES = 16 * 1024 * 1024
HELPER_POLL_SECONDS = 0.5
# While a helper starts (a new interpreter: 0.15-0.25 s here), the indexing process
# reads this much of the newest small sources itself: the first commits do not wait
# for the helper, and the committing process does not sit idle.
HELPER_HEAD_BYTES = 4 * 1024 * 1024
# The sources this process may read itself while the helper is busy (``Claims``):
# small ones only, so a commit the helper has ready never waits long.
CLAIM_MAX_SOURCE_BYTES = 1024 * 1024
# … and at most this much of them read ahead of what the helper still owes (memory).
CLAIM_AHEAD_BYTES = 4 * 1024 * 1024
# What ``_read_in_helper`` yields first: the helper process has been started.
STARTED: tuple[int, list[Batch]] = (-1, [])

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
        self.closed = False

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
        """Refuse the helper from now on (one starting finds the parent gone); twice is
        once."""
        if self.closed:
            return
        self.closed = True
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
    leave_signals_to_parent()
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


class HelperRead:
    """One indexing run's reads with a helper process: the caller commits what this
    yields, in order, while the helper reads ahead; counts go to ``stats``."""

    def __init__(self, budget: Budget, stats: IndexStats, group_bytes: int) -> None:
        self.budget = budget
        self.stats = stats
        self.group_bytes = group_bytes

    def read(
        self, sources: list[PendingSource], sizes: dict[int, int]
    ) -> Generator[tuple[int, Iterable[Batch]], None, None]:
        """Batches per source, in the given order: small sources from a helper process
        on bulk runs, large ones (and everything else) read here."""
        reader = SourceReader(self.budget)
        # A helper returns a source whole, so whole sources must fit the retained budget.
        whole = min(HELPER_MAX_SOURCE_BYTES, self.budget.max_retained_bytes)
        small = [s for s in sources if sizes[s.id] <= whole]
        helped: Generator[tuple[int, Iterable[Batch]], None, None] | None = None
        # The newest small sources this process reads itself while the helper starts.
        head: set[int] = set()
        if len(small) > 1:
            head = _head(small, sizes, HELPER_HEAD_BYTES)
            rest = [s for s in small if s.id not in head]
            helped = self._read_in_helper(rest, reader, sizes)
            if next(helped, None) is not STARTED:
                helped, head = None, set()  # it could not start: all is read here
        try:
            for src in sources:
                # The helper delivers the other small sources in this same order; once
                # it is done or gone, whatever it did not deliver is read here.
                mine = sizes[src.id] > whole or src.id in head
                item = next(helped, None) if helped is not None and not mine else None
                if item is None:
                    helped = helped if mine else None
                    yield src.id, reader.batches(src)
                else:
                    yield item
            for _ in helped or ():
                pass  # its last message: what it counted (the stats)
        finally:
            if helped is not None:
                helped.close()
        self.stats.add(reader.stats)

    def _read_in_helper(
        self, sources: list[PendingSource], reader: SourceReader, sizes: dict[int, int]
    ) -> Generator[tuple[int, Iterable[Batch]], None, None]:
        """Read and tokenize in a helper process while this one commits (two cores).

        Yields ``STARTED`` once the process is started, then each source's batches in
        the order given (``_delivered``); if the helper cannot start or connect, it
        yields nothing more and the caller reads the sources itself.
        """
        context = multiprocessing.get_context("spawn")
        with HelperChannel() as channel:
            # The helper gets only the channel's addresses: a small start-up message,
            # nothing it could read half of should this process die meanwhile.
            helper = context.Process(
                target=read_in_helper,
                args=(channel.address, channel.claims_path, self.budget, self.group_bytes),
                daemon=True,
            )
            stopped = False
            try:
                with starting_children():
                    helper.start()
                yield STARTED  # the caller reads on while the new interpreter starts
                receive = channel.accept(helper.is_alive)
                if receive is None:
                    return  # it died before it connected
                with receive:
                    receive.send(sources)
                    yield from self._delivered(sources, sizes, reader, helper, receive, channel)
            except (EOFError, OSError):
                return
            except GeneratorExit:
                stopped = True  # the run stopped early (the scheduler's stop): at once
                raise
            finally:
                # Closed first: a helper still starting would otherwise connect and
                # wait for sources that never come, and this join wait for it.
                channel.close()
                if helper.pid is not None:
                    # A stopped run's helper only reads: what it read is read again
                    # by the next run, so it is not waited for.
                    helper.join(0 if stopped else 10)
                    if helper.is_alive():
                        helper.kill()
                        helper.join()

    def _delivered(
        self,
        sources: list[PendingSource],
        sizes: dict[int, int],
        reader: SourceReader,
        helper: multiprocessing.process.BaseProcess,
        receive: multiprocessing.connection.Connection,
        channel: HelperChannel,
    ) -> Generator[tuple[int, Iterable[Batch]], None, None]:
        """Each source's batches in order: the helper's, or read here when the next
        one is not delivered yet (a small one claimed here) or the helper died."""
        places = {src.id: place for place, src in enumerate(sources)}
        ready: dict[int, tuple[int, Iterable[Batch]]] = {}

        def small(place: int) -> bool:
            return sizes[sources[place].id] <= CLAIM_MAX_SOURCE_BYTES

        want, counted = 0, False
        held: dict[int, int] = {}  # bytes of the sources read here, not yet yielded
        while want < len(sources) or not counted:
            if want in ready:
                held.pop(want, None)
                yield ready.pop(want)
                want += 1
                continue
            ahead = sum(held.values()) < CLAIM_AHEAD_BYTES
            if want < len(sources) and ahead and not receive.poll(0):
                place = channel.claims.claim(len(sources), small)
                if place is not None:
                    src = sources[place]
                    ready[place] = (src.id, list(reader.batches(src)))
                    held[place] = sizes[src.id]
                    continue
            try:
                # Poll, so a helper that died can never leave this waiting.
                if not receive.poll(HELPER_POLL_SECONDS):
                    if helper.is_alive():
                        continue
                    if not receive.poll(0):
                        break
                item = receive.recv()
            except (EOFError, OSError):
                break
            group, counts, counted = item
            self.stats.add(counts)
            for src_id, batches in group:
                ready[places[src_id]] = (src_id, batches)
            if counted and want < len(sources) and want not in ready:
                break  # it is done, yet this one is missing: read here
        # What the helper did not deliver (it died): read here, in order.
        for place in range(want, len(sources)):
            src = sources[place]
            yield ready.pop(place) if place in ready else (src.id, reader.batches(src))


def _head(sources: list[PendingSource], sizes: dict[int, int], limit: int) -> set[int]:
    """The first sources, in order, up to ``limit`` bytes (at least one, none of all)."""
    head: set[int] = set()
    total = 0
    for src in sources[:-1]:
        if total >= limit:
            break
        head.add(src.id)
        total += sizes[src.id]
    return head
