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
from typing import TYPE_CHECKING

import click

from convodex.cli.options import cache_dir_option, json_option

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService
    from convodex.warm.threads import Workers

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


def _hook(agent: str, cache_dir: Path | None) -> None:
    # The user-wide limit holds from here (stdin may never close); a project's own
    # file, read once the hook says where it runs, may change it.
    run = _Run(agent)
    _Watchdog(run)
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


def _answer(
    run: _Run, cache_dir: Path | None, raw: bytes | None = None, warm: HistoryService | None = None
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


def answer_warm(service: HistoryService, agent: str, raw: bytes, started: float) -> str:
    """The hook's output ('' for none) as a warm service gives it to the thin client
    that read the hook's input: the same answer and receipt as in-process, and nothing
    once the client's ``recall.timeout_ms`` (counted from ``started``) has passed."""
    run = _Run(agent)
    run.started = min(started, run.started)
    run.deadline = run.started + (run.deadline - time.monotonic())
    done: list[str | None] = []
    finished = threading.Event()

    def work() -> None:
        try:
            done.append(_answer(run, None, raw, service))
        except Exception as exc:
            if run.gate.acquire(blocking=False):
                try:
                    run.receipt("error", error=type(exc).__name__)
                finally:
                    run.gate.release()
            done.append(None)
        finally:
            finished.set()

    _workers().submit(work)
    while not finished.is_set() and (left := run.deadline - time.monotonic()) > 0:
        finished.wait(min(left, 0.05))  # a project's shorter limit counts soon
    if not run.gate.acquire(blocking=False):
        return ""
    if done:
        return done[0] or ""
    try:
        run.receipt("timeout")
    except Exception:
        pass  # a receipt is never worth a failure
    return ""


_recall_threads: list[Workers] = []
_recall_threads_lock = threading.Lock()


def _workers() -> Workers:
    """The service's recall threads, started on its first hook run: each keeps its
    catalog connection from one run to the next (see ``warm.threads``)."""
    from convodex.warm.threads import Workers

    with _recall_threads_lock:
        if not _recall_threads:
            _recall_threads.append(Workers(4, "convodex-recall"))
        return _recall_threads[0]


def config_default_timeout() -> float:
    """The user-wide ``recall.timeout_ms`` in seconds (the default if it is unreadable)."""
    from convodex import config

    try:
        return config.recall_settings(None).timeout_ms / 1000
    except Exception:
        return config.RECALL_KEYS["timeout_ms"][3] / 1000  # _answer says why


class _Watchdog:
    """Ends the process silently (exit 0) at the run's deadline unless the answer is
    already being written: the agent never waits longer than recall.timeout_ms."""

    def __init__(self, run: _Run) -> None:
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
