"""``convodex recent``: sessions newest first, without words (SPEC L17). Thin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from convodex import config
from convodex.catalog.plan import SearchRequest
from convodex.cli.hits import describe_progress, local_time, short_path, use_color
from convodex.cli.options import (
    color_option,
    emit_json,
    filter_options,
    history,
    json_option,
    mode_option,
    refresh_option,
    refreshed,
    request_filters,
    root_options,
    roots_or_defaults,
)
from convodex.models import Progress, RecentSession


class SessionPrinter:
    """One line a session: title · agent · project · last activity · ref."""

    def __init__(self, color: bool, page: int | None = None) -> None:
        self.color = color
        self.page_number = page

    def echo(self, text: str = "", err: bool = False) -> None:
        click.echo(text, err=err, color=self.color)

    def sessions(
        self, sessions: list[RecentSession], progress: Progress, next_cursor: str | None
    ) -> None:
        note = describe_progress(progress)
        if note:
            self.echo(note, err=True)
        for session in sessions:
            self.echo(self.line(session))
        self.echo(self.summary(len(sessions), next_cursor))

    def line(self, session: RecentSession) -> str:
        """title · agent · project · last activity, then the ref."""
        facts = [session.agent, short_path(session.project)]
        facts.append(local_time(session.last_activity_at))
        title = click.style(session.session_title, bold=True) if self.color else None
        line = " · ".join([title or session.session_title, *(f for f in facts if f)])
        ref = click.style(session.ref, dim=True) if self.color else session.ref
        return f"{line}  {ref}"

    def summary(self, count: int, next_cursor: str | None) -> str:
        if not count:
            return "no sessions"
        line = f"{count} session{'' if count == 1 else 's'}"
        if next_cursor:
            following = (self.page_number or 1) + 1
            line += f" · more: --page {following} (or --cursor {next_cursor})"
        return line


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("qualifiers", nargs=-1)
@filter_options
@click.option("--limit", type=int, default=config.DEFAULT_SEARCH_LIMIT, show_default=True)
@click.option("--page", type=int, help="Page N of this listing (1: the first).")
@click.option("--cursor", help="nextCursor from a previous page.")
@refresh_option
@color_option
@root_options
@json_option
def recent(
    qualifiers: tuple[str, ...],
    limit: int,
    page: int | None,
    cursor: str | None,
    no_refresh: bool,
    color: str,
    roots: tuple[str, ...],
    follow_symlinks: bool,
    cache_dir: Path | None,
    as_json: bool,
    **options: Any,
) -> None:
    """List sessions newest first: title, agent, project, last activity and ref.

    \b
    QUALIFIERS: agent: project: since: until: tool: session: (e.g. agent:codex
    since:yesterday), the same as the options; no words (that is a search).
    """
    request = SearchRequest(
        query=" ".join(qualifiers),
        limit=limit,
        cursor=cursor,
        page=page,
        **request_filters(options),
    )
    root_list = roots_or_defaults(roots) if roots else []
    with history(
        cache_dir, root_list, scoped=bool(roots), follow_symlinks=follow_symlinks
    ) as service:
        refreshed(service, no_refresh)
        listing = service.recent(request)
    if as_json:
        emit_json(listing)
        return
    SessionPrinter(use_color(color), page).sessions(
        listing.sessions, listing.progress, listing.next_cursor
    )


@click.command()
@click.argument("ref")
@click.option("--limit", type=int, default=10, show_default=True)
@mode_option
@color_option
@root_options
@json_option
def similar(
    ref: str,
    limit: int,
    mode: str,
    color: str,
    roots: tuple[str, ...],
    follow_symlinks: bool,
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """List the sessions most like the session REF names (an id, a prefix, id#N, a path):
    by meaning when the catalog holds embeddings, else by its most telling words."""
    root_list = roots_or_defaults(roots) if roots else []
    with history(
        cache_dir, root_list, scoped=bool(roots), follow_symlinks=follow_symlinks
    ) as service:
        found = service.similar(ref, limit, mode)
    if as_json:
        emit_json(found)
        return
    printer = SessionPrinter(use_color(color))
    if found.mode_note:
        printer.echo(found.mode_note, err=True)
    how = "by meaning" if found.mode == "hybrid" else "by words"
    printer.echo(f"sessions like {found.ref} ({how}):", err=True)
    for session in found.sessions:
        printer.echo(f"{session.similarity:.2f}  {printer.line(session)}")
    printer.echo(printer.summary(len(found.sessions), None))
