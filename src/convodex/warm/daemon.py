"""``convodex service``: a small background service that keeps one catalog warm for
short commands and exits after an idle timeout (SPEC L20).

``run`` is the service itself (in the foreground); ``start`` runs it detached and
returns once it answers; ``stop`` and ``status`` talk to it over its socket.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from convodex.warm import address, client

if TYPE_CHECKING:
    from convodex.warm.host import Host

# How long ``start`` waits for the new service to answer, and ``stop`` for it to go.
START_SECONDS = 60.0
STOP_SECONDS = 15.0


class Status(msgspec.Struct, frozen=True):
    pid: int
    version: str
    catalog: str
    seconds_up: int
    served: int


def catalog_of(cache_dir: Path | None) -> str:
    from convodex import config

    return address.catalog_file(str(config.cache_root(cache_dir)))


def status(cache_dir: Path | None) -> Status | None:
    answer = client.control(catalog_of(cache_dir), "status")
    if answer is None or len(answer) < 5:
        return None
    pid, version, catalog, up, served = answer[:5]
    return Status(int(pid), version.decode(), os.fsdecode(catalog), int(up), int(served))


def run(cache_dir: Path | None, roots: list[Path], idle_seconds: float, host: Host) -> None:
    """Serve ``roots`` until stopped, killed (SIGTERM) or idle for ``idle_seconds``."""
    from convodex.catalog.service import Background, HistoryService
    from convodex.warm.server import WarmServer

    signal.signal(signal.SIGTERM, _terminate)
    background = Background(search_workers=0)
    with HistoryService.open(cache_dir, roots, background=background) as service:
        service.start(watch=True)
        server = WarmServer(service, host)
        try:
            while not server.stopped.wait(min(5.0, max(0.05, idle_seconds))):
                if server.idle_seconds() >= idle_seconds:
                    break
        except KeyboardInterrupt:
            pass
        finally:
            server.close()


def _terminate(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # the same clean exit as Ctrl-C in the foreground


def start(cache_dir: Path | None, idle_seconds: int) -> Status:
    """Run the service detached; its status once it answers."""
    running = status(cache_dir)
    if running is not None:
        return running
    argv = [sys.executable, "-m", "convodex", "service", "run", "--idle-timeout", str(idle_seconds)]
    if cache_dir is not None:
        argv += ["--cache-dir", str(cache_dir.expanduser().absolute())]
    child = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not killed with the terminal that started it
        close_fds=True,
    )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        answered = status(cache_dir)
        if answered is not None:
            return answered
        if child.poll() is not None:
            break
        time.sleep(0.05)
    from convodex.errors import ConvodexError

    raise ConvodexError("the service did not start (run `convodex service run` to see why)")


def stop(cache_dir: Path | None) -> Status | None:
    """Ask the service to exit; its last status, or None when none was running."""
    running = status(cache_dir)
    if running is None:
        return None
    client.control(catalog_of(cache_dir), "stop")
    deadline = time.monotonic() + STOP_SECONDS
    while time.monotonic() < deadline and _alive(running.pid):
        time.sleep(0.05)
    return running


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child of this process that exited is a zombie until reaped: not alive.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == 0
