"""``convodex index``, ``convodex search`` and ``convodex demo``: thin over the service."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from convodex import config
from convodex.catalog.plan import SearchRequest
from convodex.catalog.service import HistoryService
from convodex.cli.hits import HitPrinter, use_color
from convodex.cli.options import (
    cache_dir_option,
    color_option,
    emit_json,
    history,
    json_option,
    root_options,
    roots_or_defaults,
)
from convodex.cli.stopping import stops_cleanly
from convodex.models import IndexReport, IndexStats
from convodex.text.query import parse
from convodex.warm.context import current_dir


def run_index(service: HistoryService, show_progress: bool) -> IndexStats:
    """Index the service's roots, with a progress bar on a terminal."""
    if not show_progress:
        return service.index()
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        transient=True,
        console=Console(stderr=True),
    ) as bar:
        # Sources are read newest first: recent sessions are searchable before the rest.
        task = bar.add_task("indexing, newest first", total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return service.index(report)


@click.command()
@root_options
@json_option
@stops_cleanly("index")
def index(
    roots: tuple[str, ...], follow_symlinks: bool, cache_dir: Path | None, as_json: bool
) -> None:
    """Index transcripts under the roots (default: every default root)."""
    root_list = roots_or_defaults(roots)
    with HistoryService.open(cache_dir, root_list, follow_symlinks=follow_symlinks) as service:
        stats = run_index(service, not as_json and sys.stderr.isatty())
        state = service.progress()
    if as_json:
        emit_json(IndexReport(stats=stats, progress=state, roots=[str(r) for r in root_list]))
        return
    mb = stats.bytes_read / 1e6
    click.echo(
        f"indexed {stats.indexed} of {stats.sources} sources ({stats.messages} messages, "
        f"{mb:.1f} MB) in {stats.seconds:.2f} s; {stats.failed} failed, {stats.removed} removed"
    )
    for error_class, count in sorted(stats.errors.items()):
        click.echo(f"  failed: {count} × {error_class}")


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("words", nargs=-1, required=True)
@click.option("--agent", "agents", multiple=True, help="Only this agent's sessions (repeatable).")
@click.option(
    "--project",
    "projects",
    multiple=True,
    help="Only sessions in this workspace: a path (or below it) or its last name (repeatable).",
)
@click.option("--here", is_flag=True, help="Only sessions of the current directory's project.")
@click.option("--since", help="Only messages from then on: 2026-11-01, an ISO time, 7d, 12h …")
@click.option("--until", help="Only messages until then (a date includes that day).")
@click.option("--tool", "tools", multiple=True, help="Only this tool's calls and results.")
@click.option("--role", "roles", multiple=True, help="user, assistant or tool (repeatable).")
@click.option("--session", "sessions", multiple=True, help="Only this session (id or prefix).")
@click.option("--kind", "kinds", multiple=True, help="Kinds to search (repeatable).")
@click.option(
    "--sort",
    type=click.Choice(["relevance", "newest", "oldest"]),
    default="relevance",
    show_default=True,
)
@click.option("--limit", type=int, default=config.DEFAULT_SEARCH_LIMIT, show_default=True)
@click.option("--cursor", help="nextCursor from a previous page.")
@click.option("--around", type=int, default=0, help="Messages of context before and after.")
@click.option("--wait", is_flag=True, help="Index the roots first, then search.")
@click.option(
    "--include-subagents", is_flag=True, help="Also search sub-agent and headless sessions."
)
@color_option
@root_options
@json_option
def search(
    words: tuple[str, ...],
    agents: tuple[str, ...],
    projects: tuple[str, ...],
    here: bool,
    since: str | None,
    until: str | None,
    tools: tuple[str, ...],
    roles: tuple[str, ...],
    sessions: tuple[str, ...],
    kinds: tuple[str, ...],
    sort: str,
    limit: int,
    cursor: str | None,
    around: int,
    wait: bool,
    include_subagents: bool,
    color: str,
    roots: tuple[str, ...],
    follow_symlinks: bool,
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """Search the catalog for QUERY. Never scans directories unless --wait is given.

    \b
    QUERY: words (all must match), "exact phrases", a OR b, -word or NOT word,
    prefix*, (groups), and qualifiers agent: project: kind: tool: role: session:
    since: until: (e.g. project:"my app" since:7d). A query may start with -.
    """
    # Given roots limit the search to them; --wait indexes them (or the defaults) first.
    root_list = roots_or_defaults(roots) if roots or wait else []
    request = SearchRequest(
        query=" ".join(words),
        kinds=kinds,
        limit=limit,
        cursor=cursor,
        around=around,
        sort=sort,
        include_subagents=include_subagents,
        agents=agents,
        projects=(*projects, current_dir()) if here else projects,
        since=since,
        until=until,
        tools=tools,
        roles=roles,
        sessions=sessions,
    )
    scoped = bool(roots)
    with history(cache_dir, root_list, scoped=scoped, follow_symlinks=follow_symlinks) as service:
        if wait:
            run_index(service, not as_json and sys.stderr.isatty())
        page = service.search(request)
    if as_json:
        emit_json(page)
        return
    HitPrinter(use_color(color), parse(request.query)).page(page)


@click.command()
@cache_dir_option
@click.option("--query", default="migration", show_default=True, help="The sample search.")
def demo(cache_dir: Path | None, query: str) -> None:
    """Index your sessions (or the bundled demo corpus) and run a sample search."""
    from convodex.cli.options import roots_or_demo

    roots, demo_corpus = roots_or_demo(())
    if demo_corpus:
        click.echo(f"no sessions under {config.sessions_dir()}; using the bundled demo corpus")
    with HistoryService.open(cache_dir, roots, scoped=True) as service:
        stats = run_index(service, sys.stderr.isatty())
        click.echo(
            f"indexed {stats.indexed} sources ({stats.messages} messages) in "
            f"{stats.seconds:.2f} s from {', '.join(map(str, roots))}"
        )
        click.echo(f"$ convodex search {query}")
        page = service.search(SearchRequest(query=query, limit=5, around=1))
    HitPrinter(use_color("auto"), parse(query)).page(page)
