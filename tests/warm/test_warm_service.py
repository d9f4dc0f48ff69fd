"""``convodex service start|stop|status``: a real background process, its idle exit,
and a service killed while a client waits for it (the client answers by itself)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from convodex.catalog.service import HistoryService
from convodex.warm import address
from convodex.warm.daemon import status
from warm.conftest import convodex

DEADLINE = 60.0


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().split()[2] != "Z"


@pytest.fixture
def indexed(history: HistoryService, cache_dir: Path) -> Iterator[Path]:
    """The catalog with the sessions, no service of this test process running."""
    yield cache_dir


def test_start_status_stop(indexed: Path) -> None:
    cache = ["--cache-dir", str(indexed)]
    assert convodex("service", "status", *cache).returncode == 3
    started = convodex("service", "start", *cache)
    assert started.returncode == 0 and "running" in started.stdout
    state = status(indexed)
    assert state is not None and state.catalog == address.catalog_file(str(indexed))
    again = convodex("service", "start", *cache)  # one service a catalog
    assert f"pid {state.pid}" in again.stdout
    shown = convodex("service", "status", *cache)
    assert shown.returncode == 0 and str(state.pid) in shown.stdout
    found = convodex("search", "keys", "--json", *cache)
    assert found.returncode == 0 and '"hits":[{' in found.stdout
    served = status(indexed)
    assert served is not None and served.served == 1
    stopped = convodex("service", "stop", *cache)
    assert stopped.returncode == 0 and str(state.pid) in stopped.stdout
    until(lambda: not alive(state.pid), "the service to exit")
    assert convodex("service", "status", *cache).returncode == 3
    assert not os.path.lexists(address.socket_path(state.catalog))


def test_the_service_exits_when_idle(indexed: Path) -> None:
    cache = ["--cache-dir", str(indexed)]
    assert convodex("service", "start", "--idle-timeout", "1", *cache).returncode == 0
    state = status(indexed)
    assert state is not None
    until(lambda: not alive(state.pid), "the idle service to exit")
    assert status(indexed) is None
    assert not os.path.lexists(address.socket_path(state.catalog))


def test_a_service_killed_mid_request_is_a_silent_fallback(indexed: Path) -> None:
    import subprocess
    import sys

    cache = ["--cache-dir", str(indexed)]
    expected = convodex("search", "keys", "--json", *cache)
    assert convodex("service", "start", *cache).returncode == 0
    state = status(indexed)
    assert state is not None
    path = address.socket_path(state.catalog)
    os.kill(state.pid, signal.SIGSTOP)  # it accepts nothing more, answers nothing
    try:
        waiting = subprocess.Popen(
            [sys.executable, "-m", "convodex", "search", "keys", "--json", *cache],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

        def connected() -> bool:
            with open("/proc/net/unix") as handle:  # the listener and the client's
                return sum(line.rstrip().endswith(path) for line in handle) >= 2

        until(connected, "the client to connect")
    finally:
        os.kill(state.pid, signal.SIGKILL)
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0
    assert out == expected.stdout and err == expected.stderr == ""
    # The socket it left behind is stale: the next command runs in-process at once,
    # and the next service replaces it.
    assert convodex("search", "keys", "--json", *cache).stdout == expected.stdout
    assert convodex("service", "start", *cache).returncode == 0
    convodex("service", "stop", *cache)
