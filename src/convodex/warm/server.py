"""The service end of the warm path: a Unix stream socket for one catalog, in the
user's runtime directory (0700), the socket itself 0600, every peer's user checked.

Requests: ``cli`` (a short command's argv, answered with its exit status and output),
``call`` (a named library call with a msgspec-encoded request, answered with the
result model encoded as every surface encodes it), ``recall`` (a hook's input, answered
with the hook's output), ``status`` and ``stop``. A request
from another protocol, version, catalog or environment is answered ``no``: the
client runs it in-process.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from convodex import __version__, config
from convodex.warm import NotWarm, address, client, wire
from convodex.warm.host import Host
from convodex.warm.threads import Workers

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService

log = logging.getLogger("convodex.warm")

# Requests answered at once; more wait their turn (each thread keeps its connection).
SERVING_THREADS = 8


class AlreadyServing(Exception):
    """A live service already answers for this catalog."""


def _search(service: HistoryService, body: bytes) -> Any:
    import msgspec

    from convodex.catalog.plan import SearchRequest

    return service.search(msgspec.json.decode(body, type=SearchRequest))


# name -> what it does with the service and the request's body (a msgspec-encoded
# request); the answer is the result model, encoded once by models.encode.
CALLS: dict[str, Callable[[HistoryService, bytes], Any]] = {"search": _search}


def catalog_of(service: HistoryService) -> str | None:
    """The catalog file a service answers for, as a client spells it; None for an
    in-memory catalog (no other process can share it)."""
    if service.catalog.mode != "disk" or service.catalog.path is None:
        return None
    return os.path.abspath(service.catalog.path)


def peer_uid(sock: socket.socket) -> int | None:
    return client._peer_uid(sock)


class WarmServer:
    """Answers short commands for one service's catalog until closed."""

    def __init__(
        self,
        service: HistoryService,
        host: Host,
        *,
        version: str = __version__,
        uid: int | None = None,
    ) -> None:
        catalog = catalog_of(service)
        if catalog is None or service.scope is not None:
            raise NotWarm("only a service of a whole on-disk catalog answers others")
        self.service = service
        self.host = host
        self.catalog = catalog
        self.version = version
        self.uid = os.getuid() if uid is None else uid  # the only user it answers
        self.environment = address.environment()
        self.path = address.socket_path(catalog)
        self.started = time.time()
        self.last_used = time.monotonic()
        self.served = 0  # requests of clients it may answer
        self.answered = 0  # of those, answered here (not "run it in-process")
        self.stopped = threading.Event()  # set by a ``stop`` request or close()
        self._sock = self._bind()
        self._inode = os.lstat(self.path).st_ino
        self._workers = Workers(SERVING_THREADS, "convodex-warm-request")
        self._thread = threading.Thread(target=self._accept, name="convodex-warm", daemon=True)
        self._thread.start()

    def _bind(self) -> socket.socket:
        folder = os.path.dirname(self.path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.lstat(folder)
        if st.st_uid != os.getuid():
            raise PermissionError(f"{folder} belongs to another user")
        if st.st_mode & 0o077:
            os.chmod(folder, 0o700)
        if os.path.lexists(self.path):
            live = client.connect(self.catalog)
            if live is not None:
                live.close()
                raise AlreadyServing(self.path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)  # stale: its service is gone
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(self.path)
            os.chmod(self.path, 0o600)
            sock.listen(16)
        except OSError:
            sock.close()
            raise
        return sock

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            self._workers.submit(functools.partial(self._serve, conn))

    def _serve(self, conn: socket.socket) -> None:
        fields: list[bytes] = []
        with conn:
            try:
                if peer_uid(conn) != self.uid:
                    return  # another user: not a word
                conn.settimeout(10)
                fields = wire.receive(conn)
                answer = self._answer(fields)
                conn.sendall(wire.encode(answer))
            except (OSError, ConnectionError):
                return  # the client went away: nothing to tell it
        if fields and fields[0] == b"stop":
            self.close()

    def _answer(self, fields: list[bytes]) -> list[bytes]:
        kind = fields[0] if fields else b""
        if kind == b"status":
            return [b"ok", *self.status()]
        if kind == b"stop":
            return [b"ok"]
        identity = [address.PROTOCOL.encode(), self.version.encode()]
        identity += [os.fsencode(self.catalog), self.environment.encode()]
        if fields[1:5] != identity:
            return [b"no", b"another protocol, version, catalog or environment"]
        self.last_used = time.monotonic()
        self.served += 1
        try:
            answer = self._kind(kind, fields[5:])
            self.answered += answer[0] == b"ok"
            return answer
        except NotWarm as exc:
            log.debug("ran in-process instead (%s)", exc)
        except Exception as exc:  # the client runs it itself and sees the error there
            log.warning("a warm request failed (%s)", type(exc).__name__)
        finally:
            self.last_used = time.monotonic()
        return [b"no", b"run it in-process"]

    def _kind(self, kind: bytes, fields: list[bytes]) -> list[bytes]:
        if kind == b"cli":
            return self._cli(fields)
        if kind == b"call":
            return self._call(fields)
        if kind == b"recall":
            return self._recall(fields)
        raise NotWarm("an unknown request")

    def _cli(self, fields: list[bytes]) -> list[bytes]:
        from convodex.warm.context import WarmCall
        from convodex.warm.runner import run

        cwd, out_tty, err_tty, *args = fields
        if not args or os.fsdecode(args[0]) not in client.SHORT_COMMANDS:
            raise NotWarm("not a short command")
        call = WarmCall(self.service, self.catalog, os.fsdecode(cwd))
        argv = [os.fsdecode(a) for a in args]
        code, out, err = run(call, self.host, argv, out_tty == b"1", err_tty == b"1")
        return [b"ok", str(code).encode(), out, err]

    def _call(self, fields: list[bytes]) -> list[bytes]:
        from convodex.models import encode

        name, body = fields
        handler = CALLS.get(name.decode())
        if handler is None:
            raise NotWarm("an unknown call")
        return [b"ok", encode(handler(self.service, body))]

    def _recall(self, fields: list[bytes]) -> list[bytes]:
        """A recall hook's input read by the thin client: its output ('' for none)."""
        agent, started, raw = fields
        if agent.decode() not in self.host.recall_agents:
            raise NotWarm("an agent recall has no contract for")
        answer = self.host.recall(self.service, agent.decode(), raw, float(started))
        return [b"ok", answer.encode()]

    def status(self) -> list[bytes]:
        """pid, version, catalog, seconds up, requests served."""
        up = time.time() - self.started
        return [
            str(os.getpid()).encode(),
            self.version.encode(),
            os.fsencode(self.catalog),
            f"{up:.0f}".encode(),
            str(self.served).encode(),
        ]

    def idle_seconds(self) -> float:
        return time.monotonic() - self.last_used

    def close(self) -> None:
        """Stop answering; the socket file goes unless another service took its name."""
        if self.stopped.is_set():
            return
        self.stopped.set()
        self._workers.close()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        with contextlib.suppress(OSError):
            if os.lstat(self.path).st_ino == self._inode:
                os.unlink(self.path)


def start_beside(service: HistoryService, host: Host) -> Callable[[], None]:
    """A warm server for a serving process (``serve``, ``mcp``) when it can have one,
    and what stops it: never an error (another live service, an in-memory catalog, a
    scoped service: then nothing to stop)."""
    try:
        return WarmServer(service, host).close
    except (NotWarm, AlreadyServing, OSError) as exc:
        log.debug("no warm path from this process (%s)", type(exc).__name__)
        return lambda: None


def idle_setting() -> int:
    return config.SERVICE_IDLE_SECONDS.value()
