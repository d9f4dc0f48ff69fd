"""`convodex serve`: the local history service with its web page (SPEC L7, X3)."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import click

from convodex import config
from convodex.cli.options import demo_cache_dir, root_options, roots_or_demo
from convodex.cli.stopping import stops_cleanly


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8765, show_default=True, type=int)
@root_options
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback bind (needs --token).")
@click.option("--token", envvar="CONVODEX_TOKEN", help="Bearer token required with --allow-remote.")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="With --allow-remote: a host name the server answers besides loopback names and "
    "the bound address (repeatable).",
)
@click.option("--rescan", default=60.0, show_default=True, help="Seconds between full rescans.")
@click.option(
    "--search-workers",
    type=click.IntRange(min=0),
    default=None,
    help="Processes that run searches (default: one per core; 0: in the serving process).",
)
@stops_cleanly("serve")
def serve(
    host: str,
    port: int,
    roots: tuple[str, ...],
    follow_symlinks: bool,
    cache_dir: Path | None,
    allow_remote: bool,
    token: str | None,
    allowed_hosts: tuple[str, ...],
    rescan: float,
    search_workers: int | None,
) -> None:
    """Serve search, the session tree and the web page; index in the background."""
    import uvicorn

    from convodex.catalog.service import Background, HistoryService
    from convodex.cli.warm import beside
    from convodex.hub.background import with_sync
    from convodex.hub.settings import configured_hub, serve_sync
    from convodex.web.local_app import create_app

    if not is_loopback(host) and not (allow_remote and token):
        raise click.UsageError(
            "refusing to bind a non-loopback address; pass --allow-remote and --token"
        )
    if allowed_hosts and not allow_remote:
        raise click.UsageError("--allowed-host needs --allow-remote (and --token)")
    root_list, demo = roots_or_demo(roots)
    # With ``[hub] sync_every``, the hub is kept in sync in the background (never the demo).
    hub = None if demo else serve_sync()
    if demo:
        click.echo(f"no sessions under {config.sessions_dir()}; serving the bundled demo corpus")
        cache_dir = demo_cache_dir(cache_dir)
    # Searches run in worker processes, one per core, beside this process's indexing.
    workers = search_workers if search_workers is not None else os.cpu_count() or 2
    service = HistoryService.open(
        cache_dir,
        root_list,
        background=Background(rescan, search_workers=workers),
        follow_symlinks=follow_symlinks,
    )
    # Host names answered (X9): loopback names always, the bound address, and with
    # --allow-remote the names the user configured.
    hosts = [host, *allowed_hosts] if allow_remote else [host]
    app = create_app(
        service,
        token=token if allow_remote else None,
        allowed_hosts=hosts,
        beside=with_sync(beside, hub),
        hub=None if demo else configured_hub(),  # the page asks it beside the local search
    )
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"convodex is serving {len(root_list)} root(s) at http://{shown}:{port}/")
    if hub is not None:
        click.echo(f"syncing to the hub at {hub.url} as {hub.machine} every {hub.sync_every:g} s")
    # No access log: request lines carry queries, which diagnostics never print.
    # uvicorn shuts down gracefully on SIGINT/SIGTERM (the lifespan closes the service,
    # its worker processes with it), then raises the signal again, which
    # ``stops_cleanly`` turns into one line and the signal's exit status.
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
