"""How a long-running command ends on SIGINT or SIGTERM (SPEC X10): one line on stderr
and the conventional status (128 + the signal: 130, 143), never a traceback.

Both signals raise ``Stopped`` in the main thread: ``finally`` blocks close the catalog
and stop helper and worker processes on the way out. It is a ``BaseException`` but not
a ``KeyboardInterrupt``, which libraries swallow (``uvicorn.run`` does, after its
graceful shutdown) or print (click's "Aborted!"). Processes a command starts ignore
both signals themselves (Ctrl-C reaches the whole process group): their parent stops
them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(BaseException):
    """The command was asked to stop by ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(signum)


def status(signum: int) -> int:
    """128 + the signal, or what ``CONVODEX_STOPPED_STATUS`` says: ``make run`` sets 0,
    as make dies of the same signal and reports it (a failed recipe would add make's
    own "*** Error 130" line)."""
    chosen = os.environ.get("CONVODEX_STOPPED_STATUS", "").strip()
    return int(chosen) if chosen.isdigit() else 128 + signum


def say_stopped(command: str, signum: int) -> None:
    """The one line: which command stopped, on which signal. Straight to file
    descriptor 2: ``sys.stderr`` may still be a UI's capture (Textual's) that a signal
    interrupted before it was put back."""
    name = signal.Signals(signum).name
    with contextlib.suppress(OSError):
        os.write(2, f"convodex {command}: stopped ({name})\n".encode())


@contextmanager
def stops_cleanly(command: str, *, blocked_reader: bool = False) -> Iterator[None]:
    """Run a long-running command so that SIGINT and SIGTERM end it cleanly.

    Only in the main thread (signal handlers live there); elsewhere a no-op.
    ``blocked_reader``: a thread may be blocked reading stdin (MCP's stdio transport,
    whose client keeps the pipe open), which no exception reaches and the
    interpreter would wait for at exit; once everything else has unwound (the
    catalog is closed) the process then leaves without waiting for it.
    """
    try:
        previous = {sig: signal.signal(sig, _stop) for sig in SIGNALS}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    except (Stopped, KeyboardInterrupt) as stop:
        signum = stop.signum if isinstance(stop, Stopped) else signal.SIGINT
        say_stopped(command, signum)
        if blocked_reader:
            sys.stdout.flush()
            os._exit(status(signum))
        raise SystemExit(status(signum)) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
