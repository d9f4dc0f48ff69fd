"""The ``--hub`` half of ``convodex search``: hub hits beside the local page, marked
with the machine and owner they come from (SPEC S6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from convodex.catalog.plan import SearchRequest
from convodex.models import SearchPage
from convodex.team_models import RankedHit

F = TypeVar("F", bound=Callable[..., Any])


def hub_option(fn: F) -> F:
    return click.option(
        "--hub",
        "ask_hub",
        is_flag=True,
        help="Also ask the configured team hub ([hub] in the config file).",
    )(fn)


def print_hub_hits(hits: list[RankedHit], url: str) -> None:
    click.echo(f"\nhub {url}: {len(hits)} hits")
    for hit in hits:
        where = " · ".join(p for p in (hit.machine, hit.agent, hit.owner_id) if p)
        click.echo(f"[{where}] {hit.session_title or hit.session_id} #{hit.seq}")
        click.echo(f"    {hit.snippet}")


def with_hub(
    page: SearchPage, request: SearchRequest, as_json: bool, print_local: Callable[[], None]
) -> None:
    """Ask the hub with the same request and print both answers."""
    from convodex.cli.options import emit_json
    from convodex.hub.search import search_hub
    from convodex.hub.settings import hub_settings

    settings = hub_settings()
    hits = search_hub(
        settings,
        request.query,
        limit=request.limit or 20,
        agents=request.agents,
        projects=request.projects,
        since=request.since,
        until=request.until,
    )
    if as_json:
        emit_json({"local": page, "hub": {"url": settings.url, "hits": hits}})
        return
    print_local()
    print_hub_hits(hits, settings.url)
