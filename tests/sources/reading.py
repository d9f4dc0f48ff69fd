"""Reading a source the way the indexer and search do, for the reader tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from convodex.sources.base import Budget, ReadResult, SourceMessage
from convodex.sqlite import sqlite3

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CliRun = Callable[..., Result]
"""The ``cli`` fixture's type (tests/conftest.py)."""


def read_all(fmt: Any, path: Path) -> list[SourceMessage]:
    """Every message ``read`` yields, checking that ``load`` rebuilds each exactly."""
    messages = list(fmt.read(path, ReadResult(0, 0), Budget.from_env()))
    for m in messages:  # hydration rebuilds exactly what was indexed
        loaded = fmt.load(path, m.offset, m.length, m.index)
        assert loaded is not None
        assert [(d.part, d.kind, d.text) for d in loaded.documents] == [
            (d.part, d.kind, d.text) for d in m.documents
        ]
        assert (loaded.role, loaded.session_id, loaded.title) == (m.role, m.session_id, m.title)
    return messages


def shown(messages: list[SourceMessage]) -> list[str]:
    return [m.text() for m in messages if m.documents]


Write = Callable[[sqlite3.Connection, int], None]
"""The agent's write number ``n`` on its own connection (0: left open, 1: mid-read)."""


def read_beside_a_writer(
    fmt: Any, path: Path, write: Write
) -> tuple[list[SourceMessage], list[SourceMessage]]:
    """Read a database while its agent writes: (a read during the agent's open write
    transaction, a read the agent commits into between two messages).

    The agent never waits (busy timeout 0): a reader that held a lock or a transaction
    across messages would make its commit fail.
    """
    agent = sqlite3.connect(path, timeout=0)
    try:
        agent.execute("BEGIN IMMEDIATE")
        write(agent, 0)
        during = read_all(fmt, path)
        agent.commit()
        reading = fmt.read(path, ReadResult(0, 0), Budget.from_env())
        interrupted = [next(reading)]
        with agent:
            write(agent, 1)
        interrupted.extend(reading)
    finally:
        agent.close()
    return during, interrupted
