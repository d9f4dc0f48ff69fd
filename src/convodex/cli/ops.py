"""``convodex doctor catalogs`` and ``convodex catalogs reindex history`` (SPEC L11).

Thin like the rest of the CLI. Output holds paths, counts and error classes only,
never queries, tokens, snippets, message text, tool arguments or provider content.
Exit status: 0 done, 1 error (one line on stderr), 2 usage error.
"""

from __future__ import annotations

from pathlib import Path

import click

from convodex.catalog.db import recorded_roots
from convodex.catalog.demo import kept_roots
from convodex.catalog.maintenance import doctor_catalogs, reindex_history
from convodex.cli.hits import counted, short_path
from convodex.cli.options import cache_dir_option, emit_json, json_option
from convodex.config import catalog_path
from convodex.models import CatalogReport
from convodex.sources.roots import resolve_root
from convodex.text.agents import agent_label


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


@click.group(invoke_without_command=True)
@click.option("--failed", is_flag=True, help="List each failed source: its path and why.")
@cache_dir_option
@click.pass_context
def doctor(ctx: click.Context, failed: bool, cache_dir: Path | None) -> None:
    """Diagnose convodex's local state (read-only).

    \b
    --failed: each source that could not be indexed, one line each (path, reason).
    """
    if ctx.invoked_subcommand is not None:
        return
    if not failed:
        click.echo(ctx.get_help())
        return
    from convodex.cli.search import print_failed

    found = [source for report in doctor_catalogs(cache_dir) for source in report.failed]
    if not found:
        click.echo("no failed sources")
    print_failed(found, indent="failed: ")


@doctor.command("catalogs")
@cache_dir_option
@json_option
def doctor_catalogs_command(cache_dir: Path | None, as_json: bool) -> None:
    """Each catalog's path, mode, schema, integrity, size and sources by health.

    Read-only: a missing catalog is reported, never created.
    """
    reports = doctor_catalogs(cache_dir)
    if as_json:
        emit_json({"catalogs": reports})
        return
    for report in reports:
        _print_report(report)


def _print_report(report: CatalogReport) -> None:
    click.secho(f"{report.name}  {report.path}", bold=True)
    schema = "-" if report.schema is None else str(report.schema)
    click.echo(
        f"  mode: {report.mode}   schema: {schema} (this build: {report.supported_schema})"
        f"   integrity: {report.integrity or '-'}   size: {_megabytes(report.size_bytes)}"
    )
    by_health = ", ".join(f"{count} {health}" for health, count in report.sources.items())
    click.echo(
        f"  sources: {by_health}; {report.pending} pending, {report.line_errors} unreadable lines"
    )
    for error_class, count in report.error_classes.items():
        click.echo(f"  error class: {count} × {error_class}")
    if report.failed:
        click.echo("  failed sources: `convodex doctor --failed` lists them")
    for fmt, count in report.empty_by_format.items():
        click.echo(
            f"  no messages found: {count} {agent_label(fmt)} source(s) its reader claims"
            " (a shape it does not know yet?)"
        )
    if report.embedding_model is not None:
        waiting = report.embedding_pending
        more = f", {waiting} source(s) waiting for theirs" if waiting else ""
        click.echo(f"  embeddings: {report.vectors} vectors ({report.embedding_model}){more}")
    for shape in report.unknown_shapes:
        click.echo(
            f"  unknown {shape.kind} type: {agent_label(shape.format)} {shape.name!r}"
            f" {shape.count} × in {counted(shape.sources, 'source')},"
            f" e.g. {short_path(shape.example)}"
        )
    for item in report.quarantined:
        click.echo(f"  quarantined: {item.path} ({_megabytes(item.size_bytes)})")
    if report.note:
        click.echo(f"  note: {report.note}")


@click.group()
def catalogs() -> None:
    """Manage the disposable catalogs (the session files are never touched)."""


@catalogs.group()
def reindex() -> None:
    """Rebuild a catalog into a new file and swap it in."""


@reindex.command("history")
@click.option(
    "--dir",
    "dirs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A root to rebuild from (repeatable). Default: the default roots and the "
    "roots the current catalog knows.",
)
@cache_dir_option
@json_option
def reindex_history_command(dirs: tuple[Path, ...], cache_dir: Path | None, as_json: bool) -> None:
    """Rebuild only the history search projection; the old one serves until the swap."""
    if dirs:
        roots = [resolve_root(d) for d in dirs]
    else:
        known = recorded_roots(catalog_path(cache_dir))
        # The bundled demo has its own catalog; an older catalog that recorded it drops it.
        roots = kept_roots(known)
    result = reindex_history(roots, cache_dir)
    if as_json:
        emit_json(result)
        return
    stats = result.stats
    count = len(result.roots)
    click.echo(
        f"rebuilt {result.path} from {count} root{'' if count == 1 else 's'}: "
        f"{stats.indexed} of {counted(stats.sources, 'source')}, "
        f"{counted(stats.messages, 'message')} "
        f"in {stats.seconds:.2f} s; {stats.failed} failed"
    )
    from convodex.cli.search import print_failed

    print_failed(result.failed)


@doctor.command("agents")
@click.option("--project", is_flag=True, help="This project's files instead of user-wide ones.")
@json_option
def doctor_agents_command(project: bool, as_json: bool) -> None:
    """Per agent: installed, MCP server wired, recall hook wired, and why not."""
    from convodex.agents.engine import status
    from convodex.agents.registry import AGENTS
    from convodex.agents.spec import Scope, launcher

    scope = Scope(home=Path.home(), project=Path.cwd() if project else None)
    command = launcher()
    reports = [
        status(agent, scope, command)
        for agent in AGENTS.values()
        if not (project and agent.no_project)
    ]
    if as_json:
        emit_json({"agents": reports})
        return
    for report in reports:
        hook = (
            "no hook" if report.hook is None else ("hook wired" if report.hook else "no hook wired")
        )
        click.echo(
            f"{report.agent:<12} {'installed' if report.installed else 'not installed':<14}"
            f" {'MCP wired' if report.mcp else 'MCP not wired':<14} {hook}"
        )
        for why in report.why:
            click.echo(f"{'':<12} {why}")
