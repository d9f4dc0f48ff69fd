"""The CLI as a warm service runs it (``warm/host.py``): the command line itself and the
recall hook's answer, handed to the warm path, which imports no surface."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from convodex.warm.host import Host

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService


def host() -> Host:
    from convodex.cli.main import main
    from convodex.cli.recall import answer_warm
    from convodex.recall.hook import AGENTS

    def command(args: list[str]) -> object:
        return main.main(args=args, prog_name="convodex", standalone_mode=True)

    return Host(command=command, recall=answer_warm, recall_agents=frozenset(AGENTS))


def beside(service: HistoryService) -> Callable[[], None]:
    """A warm service beside ``serve`` or ``mcp`` (SPEC L20), and what stops it."""
    from convodex.warm.server import start_beside

    return start_beside(service, host())
