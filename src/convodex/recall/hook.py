"""The recall hook run in its own process: read the agent's input, answer it, record
a receipt, and never block or break the agent (SPEC L18).

Click-free (the console script runs it straight away when no service answers, and
the CLI's ``convodex recall`` runs it too): a missing, cold or locked catalog, a bad
input, a slow disk or any error prints nothing and exits 0, and a watchdog ends the
process at ``recall.timeout_ms`` whatever it is doing. stdout carries nothing but
the one JSON answer; nothing goes to stderr (an agent may show it to the user).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService

# The agents whose hooks recall answers (``recall.hooks`` holds their contracts).
AGENTS = ("claude-code", "gemini", "qwen")


class Run:
    """One hook run: its receipt fields and the gate between answering and giving up."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.event = ""
        self.session_id: str | None = None
        self.started = time.monotonic()
        self.deadline = self.started + config_default_timeout()  # a project may change it
        self.gate = threading.Lock()

    def receipt(
        self, outcome: str, refs: list[str] | None = None, size: int = 0, error: str = ""
    ) -> None:
        from convodex.models import RecallReceipt
        from convodex.recall import receipts

        receipts.record(
            RecallReceipt(
                at=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                agent=self.agent,
                event=self.event or "?",
                session_id=self.session_id,
                outcome=outcome,  # type: ignore[arg-type]
                refs=refs or [],
                bytes=size,
                millis=int((time.monotonic() - self.started) * 1000),
                error=error or None,
            )
        )


def run_hook(agent: str, cache_dir: Path | None) -> None:
    """The hook in this process: its answer on stdout, or nothing; never an error."""
    # The user-wide limit holds from here (stdin may never close); a project's own
    # file, read once the hook says where it runs, may change it.
    run = Run(agent)
    Watchdog(run)
    try:
        said = answer(run, cache_dir)
    except BaseException as exc:  # the agent goes on whatever happened here
        if run.gate.acquire(blocking=False):
            try:
                run.receipt("error", error=type(exc).__name__)
            except BaseException:
                pass  # a receipt is never worth a failure
        os._exit(0)
    if said is not None and run.gate.acquire(blocking=False):
        sys.stdout.write(said + "\n")
        sys.stdout.flush()


def answer(
    run: Run, cache_dir: Path | None, raw: bytes | None = None, warm: HistoryService | None = None
) -> str | None:
    """The hook's output for its input (``raw``, else stdin), or None; ``warm`` is a
    running service's catalog to use (and leave open) instead of opening one."""
    from convodex import config
    from convodex.recall import hooks
    from convodex.recall.core import cwd_path

    if raw is None:
        raw = sys.stdin.buffer.read()
    hook = hooks.parse(run.agent, raw)
    run.event, run.session_id = hook.event, hook.prompt.session_id
    settings = config.recall_settings(cwd_path(hook.prompt.cwd))
    if not settings.enabled:
        run.receipt("off")
        return None
    run.deadline = run.started + settings.timeout_ms / 1000
    if not hooks.wants_prompt(hook):
        run.receipt("nothing")
        return None
    from convodex.catalog.service import HistoryService
    from convodex.recall.core import recall as recall_moments

    if warm is not None:
        block = recall_moments(warm, hook.prompt, settings.max_bytes)
    else:
        service = HistoryService.open_existing(cache_dir, [])
        if service is None:
            run.receipt("nothing", error="no catalog")
            return None
        with service:
            block = recall_moments(service, hook.prompt, settings.max_bytes)
    if block is None:
        run.receipt("nothing")
        return None
    answer = hooks.output(hook, block.text)
    run.receipt("injected", [item.ref for item in block.items], block.bytes)
    return answer


def config_default_timeout() -> float:
    """The user-wide ``recall.timeout_ms`` in seconds (the default if it is unreadable)."""
    from convodex import config

    try:
        return config.recall_settings(None).timeout_ms / 1000
    except Exception:
        return config.RECALL_KEYS["timeout_ms"][3] / 1000  # _answer says why


class Watchdog:
    """Ends the process silently (exit 0) at the run's deadline unless the answer is
    already being written: the agent never waits longer than recall.timeout_ms."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._wake = threading.Event()
        thread = threading.Thread(target=self._watch, name="convodex-recall-watchdog")
        thread.daemon = True
        thread.start()

    def _watch(self) -> None:
        while True:
            left = self.run.deadline - time.monotonic()
            if left <= 0:
                break
            self._wake.wait(min(left, 0.05))  # a shortened deadline counts soon
        if self.run.gate.acquire(blocking=False):
            try:
                self.run.receipt("timeout")
            finally:
                os._exit(0)
