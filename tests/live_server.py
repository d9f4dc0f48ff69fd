"""A real uvicorn server on a loopback port, serving the local app over real files."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from convodex.catalog.service import HistoryService
from convodex.web.local_app import create_app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(service: HistoryService, watch: bool = False) -> Iterator[httpx.Client]:
    port = free_port()
    config = uvicorn.Config(
        create_app(service, watch=watch),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield client
    finally:
        server.should_exit = True
        thread.join(15)


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> float:
    """Poll until ``predicate`` holds; returns the seconds it took."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)
    return time.monotonic() - started
