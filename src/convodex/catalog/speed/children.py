"""Processes convodex starts (search workers, the index helper) leave SIGINT and
SIGTERM to their parent (SPEC X10).

The terminal's Ctrl-C reaches the whole process group, and so may a SIGTERM: a child
that took it would print a ``KeyboardInterrupt`` traceback (or die under its parent),
while the parent is the one that decides when its children stop and stops them. A
child ignores both from its first instruction on: they are blocked in the thread
that starts it (a signal mask survives ``exec``; the new interpreter would otherwise
take them while it still imports), and the child ignores, then unblocks them.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

LEFT_TO_PARENT = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def starting_children() -> Iterator[None]:
    """Around starting processes: they begin with SIGINT and SIGTERM blocked."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no signal masks
        yield
        return
    # multiprocessing's resource tracker, started by the first spawn, blocks and then
    # UNBLOCKS both signals in this thread around its own start: started in the block
    # below, it would leave the child it was started for unprotected. So first.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, LEFT_TO_PARENT)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def leave_signals_to_parent() -> None:
    """First thing in a child: ignore SIGINT and SIGTERM, then take signals again."""
    for sig in LEFT_TO_PARENT:
        signal.signal(sig, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, LEFT_TO_PARENT)
