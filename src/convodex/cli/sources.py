"""``convodex sources``: which roots are searched, in which formats, with how many sessions.

Lists and sniffs files like a scan does; reads only the first record of each
source (for sub-agent and headless labels), never message content.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from convodex.cli.hits import counted
from convodex.cli.options import emit_json, json_option, roots_or_defaults
from convodex.sources.discover import FORMATS, scan
from convodex.sources.discover import describe as describe_source
from convodex.sources.roots import root_format


def describe(root: Path) -> dict[str, Any]:
    """One root: its format (fixed or detected per file) and counts, no content."""
    formats: dict[str, int] = {}
    subagents = headless = archived = 0
    exists = root.is_dir()
    for item in scan(root) if exists else ():
        formats[item.format] = formats.get(item.format, 0) + 1
        # A link out of the root, a FIFO … is counted, never opened.
        info, _ = describe_source(item.format, item.path, read=item.error is None)
        headless += info.headless
        subagents += info.subagent and not info.headless
        archived += info.archived
    return {
        "path": str(root),
        "exists": exists,
        "format": root_format(root) or "auto",
        "sources": sum(formats.values()),
        "formats": formats,
        "subagents": subagents,
        "headless": headless,
        "archived": archived,
    }


@click.command()
@click.option(
    "--root",
    "roots",
    multiple=True,
    help="A root to describe, PATH or PATH:format (repeatable; default: every default root).",
)
@json_option
def sources(roots: tuple[str, ...], as_json: bool) -> None:
    """List the roots searched, the formats found in them, and session counts."""
    rows = [describe(root) for root in roots_or_defaults(roots)]
    if as_json:
        emit_json({"roots": rows, "formats": sorted(FORMATS)})
        return
    for row in rows:
        state = "" if row["exists"] else "  (missing)"
        click.secho(f"{row['path']}{state}", bold=True)
        found = ", ".join(f"{n} {fmt}" for fmt, n in sorted(row["formats"].items())) or "none"
        click.echo(f"  format {row['format']}: {counted(row['sources'], 'source')} ({found})")
        if row["subagents"] or row["headless"] or row["archived"]:
            click.echo(
                f"  {row['subagents']} sub-agent, {row['headless']} headless, "
                f"{row['archived']} archived (sub-agent and headless are not searched by "
                "default: --include-subagents)"
            )
