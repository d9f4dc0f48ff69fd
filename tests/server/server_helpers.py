"""Helpers shared by the server tests (fixtures live in conftest.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from convodex.server import Database


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


def set_session_facts(db: Database, sid: str, machine: str, agent: str, project: str) -> None:
    """What a synced session carries, set directly (as ``convodex sync`` would)."""
    with db.write() as tx:
        tx.run(
            "UPDATE sessions SET machine = ?, agent = ?, project = ? WHERE id = ?",
            (machine, agent, project, sid),
        )


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
