"""Helpers shared by the server tests (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import uvicorn
from starlette.types import ASGIApp

from convodex.server import Caller


@dataclass(frozen=True)
class People:
    """Two ordinary accounts and one administrator, with their tokens."""

    alice: Caller
    bob: Caller
    admin: Caller
    tokens: dict[str, str]


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def tool_call(command: str) -> dict[str, object]:
    """An assistant message that only calls a tool (nothing shown)."""
    return {
        "role": "assistant",
        "content": [
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"cmd": command}}
        ],
    }


def tool_result(text: str) -> dict[str, object]:
    return {"role": "toolResult", "toolCallId": "c1", "content": [{"type": "text", "text": text}]}


@contextmanager
def serving(app: ASGIApp) -> Iterator[str]:
    """Run ``app`` under uvicorn on a free loopback port; yield its base URL."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="off", ws="none", log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class ServerProcess:
    """A running ``convodex server serve``: its base URL and the file holding
    everything it wrote to stdout and stderr."""

    url: str
    log: Path
    process: subprocess.Popen[bytes]

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextmanager
def server_process(db_url: str, log: Path, *, timeout: float = 30.0) -> Iterator[ServerProcess]:
    """Start ``convodex server serve`` (the real CLI, uvicorn on a free loopback port)
    as a subprocess; stop it with SIGINT, as a person would with Ctrl-C."""
    port = free_port()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "convodex", "server", "serve", "--db", db_url]
            + ["--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                httpx.get(url + "/brain/search", timeout=5)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "convodex server serve did not start:\n" + log.read_text("utf-8")
                    ) from None
                time.sleep(0.05)
        yield ServerProcess(url, log, process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
