"""``convodex recall``: the hook command agents run before a prompt (SPEC L18), and
``convodex recall --log``: what it injected.

The hook itself is ``recall.hook`` (the console script runs it without click when no
service answers); a warm service answers it through ``answer_warm``.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from convodex.cli.options import cache_dir_option, json_option
from convodex.recall.hook import AGENTS, Run, answer, run_hook

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService
    from convodex.warm.threads import Workers


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
    run_hook(agent, cache_dir)


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


def answer_warm(service: HistoryService, agent: str, raw: bytes, started: float) -> str:
    """The hook's output ('' for none) as a warm service gives it to the thin client
    that read the hook's input: the same answer and receipt as in-process, and nothing
    once the client's ``recall.timeout_ms`` (counted from ``started``) has passed."""
    run = Run(agent)
    run.started = min(started, run.started)
    run.deadline = run.started + (run.deadline - time.monotonic())
    done: list[str | None] = []
    finished = threading.Event()

    def work() -> None:
        try:
            done.append(answer(run, None, raw, service))
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
