"""`convodex sync`: push this machine's local sessions into a team hub (SPEC S6)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from convodex.cli.options import emit_json, json_option, root_options, roots_or_defaults


@click.command()
@click.option("--hub", "hub_url", metavar="URL", help="The hub (default: [hub] url).")
@click.option("--token", metavar="TOKEN", help="The account token (default: [hub] token).")
@click.option("--dry-run", is_flag=True, help="List what would be sent; send nothing.")
@json_option
@root_options
def sync(
    hub_url: str | None,
    token: str | None,
    dry_run: bool,
    as_json: bool,
    roots: tuple[str, ...],
    follow_symlinks: bool,
    cache_dir: Path | None,
) -> None:
    """Push this machine's local sessions into a hub: new and changed sessions are sent
    (likely secrets masked), deleted ones are deleted there; a second run sends nothing."""
    from convodex.catalog.service import HistoryService
    from convodex.cli.search import run_index
    from convodex.hub.settings import hub_settings
    from convodex.hub.sync import Syncer

    settings = hub_settings(hub_url, token)
    root_list = roots_or_defaults(roots)
    with HistoryService.open(cache_dir, root_list, follow_symlinks=follow_symlinks) as service:
        run_index(service, not as_json and sys.stderr.isatty(), embed=False)
        report = Syncer(service, settings, dry_run=dry_run).run()
    if as_json:
        emit_json(report)
        return
    if dry_run:
        for item in report.sessions:
            if item.action in ("send", "delete"):
                click.echo(f"would {item.action}\t{item.agent}\t{item.session_id}")
    verb = "would send" if dry_run else "sent"
    click.echo(
        f"{verb} {report.sent} sessions ({report.bytes_sent / 1e6:.1f} MB) to {report.hub}"
        f" as {report.machine}; {report.unchanged} unchanged, {report.deleted} deleted,"
        f" {report.refused} deleted on the hub, {report.excluded} not shared,"
        f" {report.failed} failed, in {report.seconds:.2f} s"
    )
