"""Per-thread standard streams: a command the service runs for a client writes into
that client's buffers, while every other thread (the server's own logging, an MCP
stdio transport) keeps writing where it did."""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO


class Captured(io.TextIOWrapper):
    """A text stream into memory that says whether the client's stream is a terminal
    (colour and paging decide on it)."""

    def __init__(self, tty: bool) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty

    def value(self) -> bytes:
        self.flush()
        buffer = self.buffer
        assert isinstance(buffer, io.BytesIO)
        return buffer.getvalue()


class _Routed:
    """Stands in for ``sys.stdout``/``sys.stderr``: this thread's capture, if any,
    else the original stream."""

    def __init__(self, original: TextIO, local: threading.local, name: str) -> None:
        self._original = original
        self._local = local
        self._name = name

    def _target(self) -> TextIO:
        target: TextIO | None = getattr(self._local, self._name, None)
        return self._original if target is None else target

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return self._target().isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)


_local = threading.local()
_install_lock = threading.Lock()


def install() -> None:
    """Route ``sys.stdout`` and ``sys.stderr`` per thread (once per process)."""
    with _install_lock:
        if not isinstance(sys.stdout, _Routed):
            sys.stdout = _Routed(sys.stdout, _local, "stdout")
        if not isinstance(sys.stderr, _Routed):
            sys.stderr = _Routed(sys.stderr, _local, "stderr")


@contextlib.contextmanager
def captured(out_tty: bool, err_tty: bool) -> Iterator[tuple[Captured, Captured]]:
    """This thread's standard streams go to memory while the block runs."""
    install()
    out, err = Captured(out_tty), Captured(err_tty)
    _local.stdout, _local.stderr = out, err
    try:
        yield out, err
    finally:
        _local.stdout = _local.stderr = None
