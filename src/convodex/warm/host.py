"""What a warm service runs for its clients, handed in by the CLI that starts it.

The warm path answers a short command by running the very CLI command in the service,
and a recall hook by the CLI's own answer; it knows them only through a ``Host`` value
made by the CLI (``cli/warm.py``), so the warm path imports no surface and the
surfaces that start a service beside them (``serve``, ``mcp``) are handed the starter
instead of importing the warm path (no import cycle through the CLI).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService


@dataclass(frozen=True)
class Host:
    # ``convodex ARGS`` as the command line would run it: ends with ``SystemExit``.
    command: Callable[[list[str]], object]
    # A recall hook's output ('' for none): (service, agent, the hook's input, start time).
    recall: Callable[[HistoryService, str, bytes, float], str]
    recall_agents: frozenset[str]  # the agents whose hooks have a recall contract


# Starts a warm service beside a serving process; what it returns stops it again.
Beside = Callable[["HistoryService"], Callable[[], None]]
