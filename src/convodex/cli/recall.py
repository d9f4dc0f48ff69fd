"""``convodex recall``: the hook command agents run before a prompt (SPEC L18), and
``convodex recall --log``: what it injected.

The hook must never block or break the agent: a missing, cold or locked catalog, a
bad input, a slow disk or any error prints nothing and exits 0, and a watchdog ends
the process at ``recall.timeout_ms`` whatever it is doing. stdout carries nothing but
the one JSON answer; nothing goes to stderr (an agent may show it to the user).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import click

from convodex.cli.options import cache_dir_option, json_option

AGENTS = ("claude-code", "gemini", "qwen")


@click.command("recall")
@click.option(
    "--agent",
    type=click.Choice(AGENTS),
    default="claude-code",
    show_default=True,
    help="Whose hook input to read and whose output to print.",
)
@click.option("--log", "show_log", is_flag=True, help="List the recorded hook runs instead.")
@click.option("--limit", type=int, default=50, show_default=True, help="With --log: newest N.")
@cache_dir_option
@json_option
def recall(agent: str, show_log: bool, limit: int, cache_dir: Path | None, as_json: bool) -> None:
    """Recall past moments for the prompt an agent's hook sends on stdin.

    Prints the agent's hook output carrying at most recall.max_bytes of the most
    relevant past moments, or nothing. Off with CONVODEX_RECALL=0 or recall.enabled =
    false (config.toml, or .convodex.toml in a project).
    """
    if show_log:
        _show_log(limit, as_json)
        return
    from convodex.warm.context import local_only

    # The hook's input is on this process's stdin, and the watchdog ends this process:
    # inside a warm service neither holds, so the client runs it itself.
    local_only("recall reads the hook's stdin and must end its own process")
    if sys.stdin.isatty():  # a person, not an agent's hook: say what it wants
        raise click.UsageError("recall reads an agent's hook input (JSON) on stdin")
    _hook(agent, cache_dir)


def _show_log(limit: int, as_json: bool) -> None:
    from convodex.cli.options import emit_json
    from convodex.recall import receipts

    runs = receipts.read(limit=max(1, limit))
    if as_json:
        emit_json(runs)
        return
    if not runs:
        click.echo("recall has not run yet (no receipts)")
        return
    for run in runs:
        refs = " ".join(run.refs)
        session = run.session_id or "-"
        detail = f"{run.bytes} B {refs}" if run.outcome == "injected" else run.error or ""
        click.echo(
            f"{run.at}  {run.agent:<11} {run.event:<16} {session[:12]:<12} "
            f"{run.outcome:<8} {run.millis:>4} ms  {detail}".rstrip()
        )
    injected = sum(1 for run in runs if run.outcome == "injected")
    click.echo(f"{injected} of {len(runs)} runs injected context")


class _Run:
    """One hook run: its receipt fields and the gate between answering and giving up."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.event = ""
        self.session_id: str | None = None
        self.started = time.monotonic()
        self.gate = threading.Lock()
        self.watchdog: _Watchdog | None = None

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


def _hook(agent: str, cache_dir: Path | None) -> None:
    from convodex import config

    run = _Run(agent)
    try:
        # The user-wide limit holds from here (stdin may never close); a project's own
        # file, read once the hook says where it runs, may change it.
        seconds = config.recall_settings(None).timeout_ms / 1000
    except Exception:
        seconds = config.RECALL_KEYS["timeout_ms"][3] / 1000  # _answer says why
    run.watchdog = _Watchdog(run, seconds)
    try:
        answer = _answer(run, cache_dir)
    except BaseException as exc:  # the agent goes on whatever happened here
        if run.gate.acquire(blocking=False):
            try:
                run.receipt("error", error=type(exc).__name__)
            except BaseException:
                pass  # a receipt is never worth a failure
        os._exit(0)
    if answer is not None and run.gate.acquire(blocking=False):
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


def _answer(run: _Run, cache_dir: Path | None) -> str | None:
    from convodex import config
    from convodex.recall import hooks
    from convodex.recall.core import cwd_path

    raw = sys.stdin.buffer.read()
    hook = hooks.parse(run.agent, raw)
    run.event, run.session_id = hook.event, hook.prompt.session_id
    settings = config.recall_settings(cwd_path(hook.prompt.cwd))
    if not settings.enabled:
        run.receipt("off")
        return None
    if run.watchdog is not None:
        run.watchdog.deadline = run.started + settings.timeout_ms / 1000
    if not hooks.wants_prompt(hook):
        run.receipt("nothing")
        return None
    from convodex.catalog.service import HistoryService
    from convodex.recall.core import recall as recall_moments

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


class _Watchdog:
    """Ends the process silently (exit 0) at ``deadline`` unless the answer is already
    being written: the agent never waits longer than recall.timeout_ms."""

    def __init__(self, run: _Run, seconds: float) -> None:
        self.run = run
        self.deadline = run.started + seconds
        self._wake = threading.Event()
        thread = threading.Thread(target=self._watch, name="convodex-recall-watchdog")
        thread.daemon = True
        thread.start()

    def _watch(self) -> None:
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                break
            self._wake.wait(min(left, 0.05))  # a shortened deadline counts soon
        if self.run.gate.acquire(blocking=False):
            try:
                self.run.receipt("timeout")
            finally:
                os._exit(0)
