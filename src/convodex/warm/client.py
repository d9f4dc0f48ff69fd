"""The thin client: ask a running service, or say it could not (``None``).

It imports nothing beyond the interpreter's own start-up set and three small C
modules, so a short command that a service answers costs about one interpreter start.
Every failure (no service, another user's or version's or catalog's, a service
killed mid-answer) is ``None``: the caller then runs the command in-process, and
nothing has been printed yet.
"""

from __future__ import annotations

import _socket
import os
import sys

from convodex.warm import address, wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

# A service answers a short command in milliseconds; one that takes longer than this
# to accept or answer is treated as gone (the command runs in-process).
CONNECT_SECONDS = 0.5
ANSWER_SECONDS = 30.0


def connect(catalog: str, uid: int | None = None) -> _socket.socket | None:
    """A connection to the service of ``catalog`` run by ``uid`` (default: this user),
    checked before anything is sent; None when there is none to trust."""
    uid = os.getuid() if uid is None else uid
    path = address.socket_path(catalog)
    if not address.private_dir(os.path.dirname(path), uid) or not address.own_socket(path, uid):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_SECONDS)
        sock.connect(path)
        if _peer_uid(sock) != uid:
            sock.close()
            return None
        sock.settimeout(ANSWER_SECONDS)
    except OSError:
        sock.close()
        return None
    return sock


def _peer_uid(sock: _socket.socket) -> int | None:
    """The connected process's user (SO_PEERCRED: pid, uid, gid); None where the
    platform has no way to tell (then the directory's and socket's owner stand)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return os.getuid()  # pragma: no cover - macOS: owner checks only
    import _struct

    _pid, uid, _gid = _struct.unpack("3i", sock.getsockopt(_socket.SOL_SOCKET, option, 12))
    return int(uid)


def identity(catalog: str) -> list[bytes]:
    """What a service must share with this client to answer it."""
    from convodex import __version__

    return [
        address.PROTOCOL.encode(),
        __version__.encode(),
        os.fsencode(catalog),
        address.environment().encode(),
    ]


def ask(catalog: str, kind: str, fields: list[bytes], uid: int | None = None) -> list[bytes] | None:
    """One request, one answer's fields after ``ok``; None for anything else."""
    sock = connect(catalog, uid)
    if sock is None:
        return None
    try:
        sock.sendall(wire.encode([kind.encode(), *identity(catalog), *fields]))
        answer = wire.receive(sock)
    except (OSError, ConnectionError):
        return None
    finally:
        sock.close()
    if not answer or answer[0] != b"ok":
        return None
    return answer[1:]


# Commands a service runs as the CLI would; others never ask it. A command joins only
# once it reads the client's directory, terminal and stdin through warm.context (a
# command that read os.getcwd() would answer for the service's directory).
# (``recall`` has its own request: see run_recall.)
SHORT_COMMANDS = frozenset({"search", "show", "recent"})


def cache_root_of(args: list[str]) -> str | None:
    """The cache root a command line names (``--cache-dir``), else the default one."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--cache-dir" and i + 1 < len(args):
            return os.path.abspath(os.path.expanduser(args[i + 1]))
        if arg.startswith("--cache-dir="):
            return os.path.abspath(os.path.expanduser(arg.partition("=")[2]))
    root = address.default_cache_root()
    return os.path.abspath(root) if root else None


def run_command(args: list[str]) -> int | None:
    """Run a short command through the service: its output is written here and its
    exit status returned; None when the caller must run it in-process."""
    if not args or args[0] not in SHORT_COMMANDS:
        return None
    root = cache_root_of(args[1:])
    if root is None:
        return None
    catalog = address.catalog_file(root)
    if not os.path.exists(address.socket_path(catalog)):
        return None  # the common case without a service: one stat
    fields = [
        os.fsencode(os.getcwd()),
        b"1" if _isatty(1) else b"0",
        b"1" if _isatty(2) else b"0",
        *map(os.fsencode, args),
    ]
    answer = ask(catalog, "cli", fields)
    if answer is None or len(answer) != 3:
        return None
    code, out, err = answer
    _write(1, out)
    _write(2, err)
    return int(code)


# Hook input is one small JSON object; an agent closes stdin at once. Longer than this
# and the hook runs in-process, where its watchdog holds the configured limit.
STDIN_SECONDS = 0.5


def run_recall(args: list[str]) -> int | None:
    """The recall hook answered by the service (stdin read here, forwarded whole);
    None when the caller must run it in-process (``sys.stdin`` then still holds it)."""
    started = _monotonic()
    options = recall_options(args)
    if options is None:
        return None
    agent, cache = options
    catalog = catalog_for(cache)
    if catalog is None or not os.path.exists(address.socket_path(catalog)) or _isatty(0):
        return None
    raw, closed = _read_stdin(started + STDIN_SECONDS)
    answer = None
    if closed:
        answer = ask(catalog, "recall", [agent.encode(), repr(started).encode(), raw])
    if answer is None or len(answer) != 1:
        _restore_stdin(raw)
        return None
    if answer[0]:
        _write(1, answer[0] + b"\n")
    return 0


def recall_options(args: list[str]) -> tuple[str, str | None] | None:
    """(agent, cache dir) of a plain ``recall`` hook command line, or None: --log,
    --help and anything else are the CLI's business."""
    if not args or args[0] != "recall":
        return None
    agent, cache, rest = "claude-code", None, args[1:]
    while rest:
        arg, *rest = rest
        if arg in ("--agent", "--cache-dir") and rest:
            value, *rest = rest
        elif arg.startswith(("--agent=", "--cache-dir=")):
            arg, _, value = arg.partition("=")
        else:
            return None
        if not value:
            return None  # the CLI says what is wrong with an empty one
        if arg == "--agent":
            agent = value
        else:
            cache = value
    return agent, cache


def _monotonic() -> float:
    import time

    return time.monotonic()


def _read_stdin(deadline: float) -> tuple[bytes, bool]:
    """What stdin holds until it closes or ``deadline`` passes, and whether it closed."""
    import select

    chunks: list[bytes] = []
    while True:
        left = deadline - _monotonic()
        if left <= 0 or not select.select([0], [], [], left)[0]:
            return b"".join(chunks), False
        chunk = os.read(0, 65536)
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)


def _restore_stdin(raw: bytes) -> None:
    """``sys.stdin`` as it was: the bytes already read, then the rest of the real one."""
    import io

    class Rest(io.RawIOBase):
        def __init__(self) -> None:
            self.head = raw

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            if self.head:
                n = min(len(buffer), len(self.head))
                buffer[:n] = self.head[:n]
                self.head = self.head[n:]
                return n
            data = os.read(0, len(buffer))
            buffer[: len(data)] = data
            return len(data)

    sys.stdin = io.TextIOWrapper(io.BufferedReader(Rest()), encoding="utf-8")


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _write(fd: int, data: bytes) -> None:
    """All of ``data`` to a descriptor (a closed pipe ends it quietly, as click does)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BrokenPipeError:
            return
        view = view[written:]


def answer(args: list[str]) -> int | None:
    """A short command (or a recall hook) answered by the service: its exit status, or
    None when the caller must run the click CLI in its own process (``__main__``)."""
    try:
        if args and args[0] == "recall":
            return run_recall(args)
        return run_command(args)
    except KeyboardInterrupt:
        _write(2, b"\nAborted!\n")
        raise SystemExit(1) from None


def catalog_for(cache_dir: str | os.PathLike[str] | None) -> str | None:
    """The catalog file a cache dir (or the default one) holds, as services name it."""
    if cache_dir is not None:
        return address.catalog_file(os.path.expanduser(os.fspath(cache_dir)))
    root = address.default_cache_root()
    return address.catalog_file(root) if root else None


def call(
    cache_dir: str | os.PathLike[str] | None, name: str, request: object, result: type[T]
) -> T | None:
    """A library call (``search`` …) answered by the service as a result model, or
    None: then the caller makes the call in-process and gets the same answer."""
    catalog = catalog_for(cache_dir)
    if catalog is None or not os.path.exists(address.socket_path(catalog)):
        return None
    import msgspec

    try:
        answer = ask(catalog, "call", [name.encode(), msgspec.json.encode(request)])
        if answer is None or len(answer) != 1:
            return None
        return msgspec.json.decode(answer[0], type=result)
    except (TypeError, ValueError, msgspec.MsgspecError):
        return None


def control(catalog: str, kind: str) -> list[bytes] | None:
    """``status`` or ``stop`` for whichever version of convodex serves the catalog."""
    sock = connect(catalog)
    if sock is None:
        return None
    try:
        sock.sendall(wire.encode([kind.encode()]))
        answer = wire.receive(sock)
    except (OSError, ConnectionError):
        return None
    finally:
        sock.close()
    return answer[1:] if answer and answer[0] == b"ok" else None
