"""``convodex recall`` as an agent's hook runs it, answered before click loads (SPEC
L18, issue 26): it runs before every prompt, and importing click and the CLI was half
of its time when no service answers it.

Only the plain forms are answered here (``--agent`` of a known agent, ``--cache-dir``,
stdin not a terminal); anything else (``--log``, ``--help``, a person at a terminal)
is None and the click command runs, in its own words. What runs is the command's own
hook (``recall.hook``): the same answer, receipt and watchdog.
"""

from __future__ import annotations

import sys
from pathlib import Path


def answer(args: list[str]) -> int | None:
    """The hook run here and its exit status, or None: the click command runs."""
    from convodex.warm.client import recall_options

    options = recall_options(["recall", *args])
    if options is None or sys.stdin is None or sys.stdin.isatty():
        return None
    from convodex.recall.hook import AGENTS, run_hook

    agent, cache = options
    if agent not in AGENTS:
        return None
    run_hook(agent, Path(cache) if cache is not None else None)
    return 0
