"""``convodex index``, ``convodex search`` and ``convodex demo``: thin over the service."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from convodex import config
from convodex.catalog.plan import SearchRequest
from convodex.catalog.service import HistoryService
from convodex.cli.options import (
    cache_dir_option,
    emit_json,
    json_option,
    root_options,
    roots_or_defaults,
)
from convodex.models import IndexReport, IndexStats, Progress, SearchPage


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
        task = bar.add_task("indexing", total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return service.index(report)


def describe_progress(state: Progress) -> str | None:
    if state.state == "empty":
        return "the index is empty: run `convodex index` (or search with --wait)"
    if state.state == "indexing":
        return (
            f"index incomplete: {state.indexed} of {state.total} sources indexed, "
            f"{state.pending} pending; results may be partial (use --wait)"
        )
    if state.state == "degraded":
        return "the catalog is read-only (degraded mode); results may be stale"
    return None


@click.command()
@root_options
@json_option
def index(roots: tuple[str, ...], cache_dir: Path | None, as_json: bool) -> None:
    """Index transcripts under the roots (default: every default root)."""
    root_list = roots_or_defaults(roots)
    with HistoryService.open(cache_dir, root_list) as service:
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


@click.command()
@click.argument("query")
@click.option("--kind", "kinds", multiple=True, help="Kinds to search (repeatable).")
@click.option("--limit", type=int, default=config.DEFAULT_SEARCH_LIMIT, show_default=True)
@click.option("--cursor", help="nextCursor from a previous page.")
@click.option("--around", type=int, default=0, help="Messages of context before and after.")
@click.option("--wait", is_flag=True, help="Index the roots first, then search.")
@click.option(
    "--include-subagents", is_flag=True, help="Also search sub-agent and headless sessions."
)
@root_options
@json_option
def search(
    query: str,
    kinds: tuple[str, ...],
    limit: int,
    cursor: str | None,
    around: int,
    wait: bool,
    include_subagents: bool,
    roots: tuple[str, ...],
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """Search the catalog. Never scans directories unless --wait is given."""
    # Given roots limit the search to them; --wait indexes them (or the defaults) first.
    root_list = roots_or_defaults(roots) if roots or wait else []
    request = SearchRequest(
        query=query,
        kinds=kinds,
        limit=limit,
        cursor=cursor,
        around=around,
        include_subagents=include_subagents,
    )
    with HistoryService.open(cache_dir, root_list, scoped=bool(roots)) as service:
        if wait:
            run_index(service, not as_json and sys.stderr.isatty())
        page = service.search(request)
    if as_json:
        emit_json(page)
        return
    print_hits(page)


def print_hits(page: SearchPage) -> None:
    note = describe_progress(page.progress)
    if page.stale_cursor:
        click.echo("the catalog changed since that cursor: search again from the start", err=True)
    if note:
        click.echo(note, err=True)
    if not page.hits:
        click.echo("no hits")
    for hit in page.hits:
        title = hit.session_title or hit.session_id
        where = f"{hit.session_path}#{hit.message_index}"
        tool = f" {hit.tool_name}" if hit.tool_name else ""
        click.secho(f"{title}  ", bold=True, nl=False)
        click.secho(f"[{hit.kind}{tool}] {where}", dim=True)
        click.echo(f"  {hit.snippet}")
        for ctx in hit.around or ():
            marker = ">" if ctx.hit else " "
            click.echo(f"   {marker} {ctx.message_index:>4} {ctx.role:<9} {ctx.text[:160]}")
    if page.next_cursor:
        click.echo(f"more: --cursor {page.next_cursor}")


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
        click.echo(f"$ convodex search {query!r}")
        page = service.search(SearchRequest(query=query, limit=5, around=1))
    print_hits(page)
