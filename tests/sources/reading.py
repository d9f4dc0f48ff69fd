"""Reading a source the way the indexer and search do, for the reader tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from convodex.sources.base import Budget, ReadResult, SourceMessage

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
