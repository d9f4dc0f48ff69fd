"""``convodex doctor catalogs`` and ``convodex catalogs reindex history`` (SPEC L11).

Thin like the rest of the CLI. Output holds paths, counts and error classes only,
never queries, tokens, snippets, message text, tool arguments or provider content.
Exit status: 0 done, 1 error (one line on stderr), 2 usage error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import msgspec

from convodex.catalog.maintenance import doctor_catalogs, recorded_roots, reindex_history
from convodex.config import catalog_path
from convodex.sources.discover import default_roots, resolve_root

_cache_dir_option = click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    help="Cache root (default: $CONVODEX_CACHE_HOME or the platform cache dir).",
)


def _emit_json(data: Any) -> None:
    click.echo(msgspec.json.encode(data).decode("utf-8"))


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


@click.group()
def doctor() -> None:
    """Diagnose convodex's local state (read-only)."""


@doctor.command("catalogs")
@_cache_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def doctor_catalogs_command(cache_dir: Path | None, as_json: bool) -> None:
    """Each catalog's path, mode, schema, integrity, size and sources by health.

    Read-only: a missing catalog is reported, never created.
    """
    reports = doctor_catalogs(cache_dir)
    if as_json:
        _emit_json({"catalogs": reports})
        return
    for report in reports:
        _print_report(report)


def _print_report(report: dict[str, Any]) -> None:
    click.secho(f"{report['name']}  {report['path']}", bold=True)
    schema = "-" if report["schema"] is None else str(report["schema"])
    click.echo(
        f"  mode: {report['mode']}   schema: {schema} (this build: {report['supportedSchema']})"
        f"   integrity: {report['integrity'] or '-'}   size: {_megabytes(report['sizeBytes'])}"
    )
    by_health = ", ".join(f"{count} {health}" for health, count in report["sources"].items())
    click.echo(
        f"  sources: {by_health}; {report['pending']} pending, "
        f"{report['lineErrors']} unreadable lines"
    )
    for error_class, count in report["errorClasses"].items():
        click.echo(f"  error class: {count} × {error_class}")
    for item in report["quarantined"]:
        click.echo(f"  quarantined: {item['path']} ({_megabytes(item['sizeBytes'])})")
    if report["note"]:
        click.echo(f"  note: {report['note']}")


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
@_cache_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def reindex_history_command(dirs: tuple[Path, ...], cache_dir: Path | None, as_json: bool) -> None:
    """Rebuild only the history search projection; the old one serves until the swap."""
    if dirs:
        roots = [resolve_root(d) for d in dirs]
    else:
        known = recorded_roots(catalog_path(cache_dir))
        roots = [resolve_root(p, must_exist=False) for p in [*default_roots(), *known]]
    result = reindex_history(roots, cache_dir)
    if as_json:
        _emit_json(result)
        return
    stats = result["stats"]
    count = len(result["roots"])
    click.echo(
        f"rebuilt {result['path']} from {count} root{'' if count == 1 else 's'}: "
        f"{stats['indexed']} of {stats['sources']} sources, {stats['messages']} messages "
        f"in {stats['seconds']:.2f} s; {stats['failed']} failed"
    )
    for error_class, count in sorted(stats["errors"].items()):
        click.echo(f"  failed: {count} × {error_class}")
