"""``convodex index``, ``convodex search`` and ``convodex demo``: thin over the service."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from convodex import config
from convodex.catalog.plan import SearchRequest
from convodex.catalog.service import HistoryService
from convodex.cli.hits import HitPrinter, counted, short_path, use_color
from convodex.cli.hub_search import hub_option, with_hub
from convodex.cli.options import (
    cache_dir_option,
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
from convodex.cli.plain import index_summary
from convodex.cli.stopping import stops_cleanly
from convodex.models import UNSET, FailedSource, IndexReport, IndexStats
from convodex.text.query import parse


def run_index(service: HistoryService, show_progress: bool, *, embed: bool = True) -> IndexStats:
    """Index the service's roots, with a progress bar on a terminal; ``embed=False``
    for a command that goes on to use the words alone (``search --wait``, ``sync``,
    ``demo``): it answers when the lexical commit is done, embeddings come later."""
    if not show_progress:
        return service.index(embed=embed)
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

        embedding: list[Any] = []  # its task, once the pass after indexing begins

        def embedded(done: int, total: int) -> None:
            if not embedding:  # searchable by words already; meaning follows
                bar.update(task, visible=False)
                embedding.append(bar.add_task("embedding for search by meaning", total=total))
            bar.update(embedding[0], completed=done, total=total)

        return service.index(report, embedding=embedded, embed=embed)


@click.command()
@root_options
@json_option
@stops_cleanly("index")
def index(
    roots: tuple[str, ...], follow_symlinks: bool, cache_dir: Path | None, as_json: bool
) -> None:
    """Index transcripts under the roots (default: every default root)."""
    if not roots and drop_demo(cache_dir, as_json):
        return
    root_list = roots_or_defaults(roots)
    with HistoryService.open(cache_dir, root_list, follow_symlinks=follow_symlinks) as service:
        stats = run_index(service, not as_json and sys.stderr.isatty())
        state = service.progress()
        failed = service.failed_sources()
    if as_json:
        roots_shown = [str(r) for r in root_list]
        emit_json(IndexReport(stats=stats, progress=state, roots=roots_shown, failed=failed))
        return
    click.echo(index_summary(stats, len(failed)))
    print_failed(failed)


def drop_demo(cache_dir: Path | None, as_json: bool) -> bool:
    """A plain ``index`` of a catalog an older version recorded the bundled demo in:
    rebuilt without it (the roots it knows kept), said, and reported as the index run;
    False when there was no demo to drop."""
    from convodex.catalog.demo import drop_recorded

    rebuilt = drop_recorded(cache_dir)
    if rebuilt is None:
        return False
    if as_json:
        stats, state, failed = rebuilt.stats, rebuilt.progress, rebuilt.failed
        emit_json(IndexReport(stats=stats, progress=state, roots=rebuilt.roots, failed=failed))
        return True
    click.echo("dropped the bundled demo corpus an older version indexed into this catalog")
    click.echo(index_summary(rebuilt.stats, len(rebuilt.failed)))
    print_failed(rebuilt.failed)
    return True


def print_failed(failed: list[FailedSource], indent: str = "  failed: ") -> None:
    """One line per failed source: its path (home as ``~``) and why."""
    for source in failed:
        click.echo(f"{indent}{short_path(source.path)}: {source.reason}")


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("words", nargs=-1)
@filter_options
@click.option("--kind", "kinds", multiple=True, help="Kinds to search (repeatable).")
@click.option(
    "--sort",
    type=click.Choice(["relevance", "newest", "oldest"]),
    default="relevance",
    show_default=True,
)
@click.option("--limit", type=int, default=config.DEFAULT_SEARCH_LIMIT, show_default=True)
@click.option("--page", type=int, help="Page N of these hits (1: the first).")
@click.option("--cursor", help="nextCursor from a previous page.")
@click.option("--around", type=int, default=0, help="Messages of context before and after.")
@click.option(
    "--no-group",
    "no_group",
    is_flag=True,
    help="One hit per matching message part, not each session once by its best hit.",
)
@mode_option
@click.option("--wait", is_flag=True, help="Index the roots first, then search.")
@refresh_option
@color_option
@root_options
@json_option
@hub_option
def search(
    words: tuple[str, ...],
    kinds: tuple[str, ...],
    sort: str,
    limit: int,
    page: int | None,
    cursor: str | None,
    around: int,
    no_group: bool,
    mode: str,
    wait: bool,
    no_refresh: bool,
    color: str,
    roots: tuple[str, ...],
    follow_symlinks: bool,
    cache_dir: Path | None,
    as_json: bool,
    ask_hub: bool,
    **options: Any,
) -> None:
    """Search the catalog for QUERY. Never scans directories unless --wait is given.

    \b
    QUERY: words (all must match), "exact phrases", a OR b, -word or NOT word,
    prefix*, (groups), and qualifiers agent: project: kind: tool: role: session:
    since: until: (e.g. project:"my app" since:7d). A query may start with -.
    Without words (filters only) it lists sessions newest first, as `recent` does.
    """
    # Given roots limit the search to them; --wait indexes them (or the defaults) first.
    root_list = roots_or_defaults(roots) if roots or wait else []
    request = SearchRequest(
        query=" ".join(words),
        kinds=kinds,
        limit=limit,
        cursor=cursor,
        page=page,
        around=around,
        sort=sort,
        group=not no_group,
        mode=mode,
        **request_filters(options),
    )
    scoped = bool(roots)
    with history(cache_dir, root_list, scoped=scoped, follow_symlinks=follow_symlinks) as service:
        if wait:
            run_index(service, not as_json and sys.stderr.isatty(), embed=False)
        else:
            refreshed(service, no_refresh)
        found = service.search(request)

    def show() -> None:
        if found.sessions is not UNSET:
            from convodex.cli.recent import SessionPrinter

            printer = SessionPrinter(use_color(color), page)
            printer.sessions(found.sessions, found.progress, found.next_cursor)
            return
        HitPrinter(use_color(color), parse(request.query), page or 1).page(found)

    if ask_hub:
        with_hub(found, request, as_json, show)
    elif as_json:
        emit_json(found)
    else:
        show()


@click.command()
@cache_dir_option
@click.option("--query", default="migration", show_default=True, help="The sample search.")
def demo(cache_dir: Path | None, query: str) -> None:
    """Index your sessions (or the bundled demo corpus) and run a sample search."""
    from convodex.cli.options import demo_cache_dir, roots_or_demo

    roots, demo_corpus = roots_or_demo(())
    if demo_corpus:
        click.echo(f"no sessions under {config.sessions_dir()}; using the bundled demo corpus")
        cache_dir = demo_cache_dir(cache_dir)
    with HistoryService.open(cache_dir, roots, scoped=True) as service:
        stats = run_index(service, sys.stderr.isatty(), embed=False)
        click.echo(
            f"indexed {counted(stats.indexed, 'source')} ({counted(stats.messages, 'message')}) in "
            f"{stats.seconds:.2f} s from {', '.join(map(str, roots))}"
        )
        click.echo(f"$ convodex search {query}")
        page = service.search(SearchRequest(query=query, limit=5, around=1))
    HitPrinter(use_color("auto"), parse(query)).page(page)
