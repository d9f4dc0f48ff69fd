"""``convodex service start|stop|status|run``: the background service of the warm path
(SPEC L20). Thin over ``convodex.warm.daemon``."""

from __future__ import annotations

from pathlib import Path

import click

from convodex import config
from convodex.cli.options import cache_dir_option

IDLE = config.SERVICE_IDLE_SECONDS


def _idle_option(fn: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--idle-timeout",
        type=click.IntRange(min=1),
        default=None,
        help=f"Seconds without a request before it exits (default {IDLE.default}, or ${IDLE.env}).",
    )(fn)


@click.group()
def service() -> None:
    """A background service that answers short commands (search, show, recent) at once."""


@service.command()
@_idle_option
@cache_dir_option
def start(idle_timeout: int | None, cache_dir: Path | None) -> None:
    """Start it (if it is not running); it exits after the idle timeout."""
    from convodex.warm import daemon

    idle = idle_timeout or IDLE.value()
    state = daemon.start(cache_dir, idle)
    click.echo(f"convodex service running (pid {state.pid}, version {state.version})")


@service.command()
@cache_dir_option
def stop(cache_dir: Path | None) -> None:
    """Stop it."""
    from convodex.warm import daemon

    state = daemon.stop(cache_dir)
    click.echo("convodex service not running" if state is None else f"stopped pid {state.pid}")


@service.command()
@cache_dir_option
def status(cache_dir: Path | None) -> None:
    """Say whether it runs (exit status 3 when it does not)."""
    from convodex.warm import daemon

    state = daemon.status(cache_dir)
    if state is None:
        click.echo("convodex service not running")
        raise SystemExit(3)
    click.echo(
        f"convodex service running (pid {state.pid}, version {state.version}, "
        f"up {state.seconds_up} s, {state.served} requests) for {state.catalog}"
    )


@service.command()
@_idle_option
@cache_dir_option
def run(idle_timeout: int | None, cache_dir: Path | None) -> None:
    """Run it in the foreground (what `start` runs detached)."""
    from convodex.cli.options import roots_or_defaults
    from convodex.cli.warm import host
    from convodex.warm import daemon

    daemon.run(cache_dir, roots_or_defaults(()), idle_timeout or IDLE.value(), host())
