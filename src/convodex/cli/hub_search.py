"""The ``--hub`` half of ``convodex search``: hub hits beside the local page, marked
with the machine and owner they come from (SPEC S6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from convodex.catalog.plan import SearchRequest
from convodex.models import SearchPage
from convodex.team_models import HubAnswer, LocalAndHub

F = TypeVar("F", bound=Callable[..., Any])


def hub_option(fn: F) -> F:
    return click.option(
        "--hub",
        "ask_hub",
        is_flag=True,
        help="Also ask the configured team hub ([hub] in the config file).",
    )(fn)


def print_hub_hits(answer: HubAnswer) -> None:
    if answer.error is not None:
        click.echo(f"\nhub {answer.hub}: {answer.error}")
        return
    click.echo(f"\nhub {answer.hub}: {len(answer.hits)} hits")
    for hit in answer.hits:
        where = " · ".join(p for p in (hit.machine, hit.agent, hit.owner_id) if p)
        click.echo(f"[{where}] {hit.session_title or hit.session_id} #{hit.seq}")
        click.echo(f"    {hit.snippet}")


def with_hub(
    page: SearchPage, request: SearchRequest, as_json: bool, print_local: Callable[[], None]
) -> None:
    """Ask the hub with the same request and print both answers; a hub that cannot
    answer is one line after the local answer, which stands."""
    from convodex.cli.options import emit_json
    from convodex.hub.search import HubQuestion
    from convodex.hub.settings import hub_settings

    answer = HubQuestion(hub_settings(), request).answer()
    if as_json:
        emit_json(LocalAndHub(local=page, hub=answer))
        return
    print_local()
    print_hub_hits(answer)
