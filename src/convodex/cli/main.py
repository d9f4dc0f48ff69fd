"""The ``convodex`` command. Thin: parse, call the library, print."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import msgspec

from convodex import config
from convodex.catalog.batches import IndexStats
from convodex.catalog.db import Catalog, open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.search import Searcher, progress
from convodex.cli.mcp import mcp
from convodex.cli.ops import catalogs, doctor
from convodex.cli.options import root_options, roots_or_defaults, roots_or_demo
from convodex.cli.serve import serve
from convodex.cli.server import server
from convodex.errors import ConvodexError
from convodex.sources.discover import resolve_root


class _Group(click.Group):
    """Turns convodex errors into one line on stderr and exit status 1, no traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConvodexError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(1)


def _emit_json(data: Any) -> None:
    click.echo(msgspec.json.encode(data).decode("utf-8"))


def _index(catalog: Catalog, roots: list[Path], show_progress: bool) -> IndexStats:
    existing = [r for r in roots if r.is_dir()]
    indexer = Indexer(catalog)
    if not show_progress:
        return indexer.run(existing)
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

        return indexer.run(existing, report)


def _describe_progress(state: dict[str, Any]) -> str | None:
    if state["state"] == "empty":
        return "the index is empty: run `convodex index` (or search with --wait)"
    if state["state"] == "indexing":
        return (
            f"index incomplete: {state['indexed']} of {state['total']} sources indexed, "
            f"{state['pending']} pending; results may be partial (use --wait)"
        )
    if state["state"] == "degraded":
        return "the catalog is read-only (degraded mode); results may be stale"
    return None


@click.group(cls=_Group)
@click.version_option(package_name="convodex")
def main() -> None:
    """Search every conversation you and your agents have had."""


main.add_command(server)
main.add_command(mcp)
main.add_command(doctor)
main.add_command(catalogs)
main.add_command(serve)


@main.command()
@root_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def index(roots: tuple[Path, ...], cache_dir: Path | None, as_json: bool) -> None:
    """Index transcripts under the roots (default: convodex's own sessions)."""
    root_list = roots_or_defaults(roots)
    with open_catalog(cache_dir) as catalog:
        stats = _index(catalog, root_list, not as_json and sys.stderr.isatty())
        state = progress(catalog)
    if as_json:
        _emit_json(
            {"stats": stats.as_json(), "progress": state, "roots": [str(r) for r in root_list]}
        )
        return
    mb = stats.bytes_read / 1e6
    click.echo(
        f"indexed {stats.indexed} of {stats.sources} sources ({stats.messages} messages, "
        f"{mb:.1f} MB) in {stats.seconds:.2f} s; {stats.failed} failed, {stats.removed} removed"
    )
    for error_class, count in sorted(stats.errors.items()):
        click.echo(f"  failed: {count} × {error_class}")


@main.command()
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
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def search(
    query: str,
    kinds: tuple[str, ...],
    limit: int,
    cursor: str | None,
    around: int,
    wait: bool,
    include_subagents: bool,
    roots: tuple[Path, ...],
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """Search the catalog. Never scans directories unless --wait is given."""
    root_list = [resolve_root(p) for p in roots] if roots else None
    with open_catalog(cache_dir) as catalog:
        if wait:
            _index(catalog, root_list or roots_or_defaults(()), not as_json and sys.stderr.isatty())
        result = Searcher(catalog).search(
            query,
            kinds=list(kinds),
            limit=limit,
            cursor=cursor,
            roots=root_list,
            around=around,
            include_subagents=include_subagents,
        )
    if as_json:
        _emit_json(result)
        return
    _print_hits(result)


def _print_hits(result: dict[str, Any]) -> None:
    note = _describe_progress(result["progress"])
    if result["staleCursor"]:
        click.echo("the catalog changed since that cursor: search again from the start", err=True)
    if note:
        click.echo(note, err=True)
    if not result["hits"]:
        click.echo("no hits")
    for hit in result["hits"]:
        title = hit["sessionTitle"] or hit["sessionId"]
        where = f"{hit['sessionPath']}#{hit['messageIndex']}"
        tool = f" {hit['toolName']}" if hit["toolName"] else ""
        click.secho(f"{title}  ", bold=True, nl=False)
        click.secho(f"[{hit['kind']}{tool}] {where}", dim=True)
        click.echo(f"  {hit['snippet']}")
        for ctx in hit.get("around", []):
            marker = ">" if ctx["hit"] else " "
            click.echo(f"   {marker} {ctx['messageIndex']:>4} {ctx['role']:<9} {ctx['text'][:160]}")
    if result["nextCursor"]:
        click.echo(f"more: --cursor {result['nextCursor']}")


@main.command()
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--query", default="migration", show_default=True, help="The sample search.")
def demo(cache_dir: Path | None, query: str) -> None:
    """Index your sessions (or the bundled demo corpus) and run a sample search."""
    roots, demo_corpus = roots_or_demo(())
    if demo_corpus:
        click.echo(f"no sessions under {config.sessions_dir()}; using the bundled demo corpus")
    with open_catalog(cache_dir) as catalog:
        stats = _index(catalog, roots, sys.stderr.isatty())
        click.echo(
            f"indexed {stats.indexed} sources ({stats.messages} messages) in "
            f"{stats.seconds:.2f} s from {', '.join(map(str, roots))}"
        )
        click.echo(f"$ convodex search {query!r}")
        result = Searcher(catalog).search(query, roots=roots, limit=5, around=1)
    _print_hits(result)


from convodex.cli.sources import sources  # noqa: E402 - it builds on this module

main.add_command(sources)
