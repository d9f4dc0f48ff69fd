"""``convodex mcp``: the history_search tool for agents over MCP stdio (SPEC X4).

Thin like the rest of the CLI. stdout belongs to the protocol, so nothing here
prints; diagnostics go to stderr and never include queries or message text.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from convodex.cli.options import root_options, roots_or_defaults
from convodex.cli.stopping import stops_cleanly


@click.command("mcp")
@root_options
@click.option(
    "--no-index",
    is_flag=True,
    help="Serve the catalog as it is; never scan the roots (another process keeps it current).",
)
@click.option(
    "--no-redact",
    is_flag=True,
    help="Answer with text as recorded; by default likely secrets are masked (X11).",
)
@stops_cleanly("mcp", blocked_reader=True)
def mcp(
    roots: tuple[str, ...],
    follow_symlinks: bool,
    cache_dir: Path | None,
    no_index: bool,
    no_redact: bool,
) -> None:
    """Serve the history_search tool to an agent over MCP (stdio).

    With --root, searches are limited to those roots; by default the default roots are
    indexed and the whole catalog is searched.
    """
    from convodex.cli.warm import beside
    from convodex.hub.settings import configured_hub
    from convodex.mcp import serve_stdio

    root_list = roots_or_defaults(roots)
    logging.basicConfig(level=logging.WARNING, format="convodex mcp: %(message)s")
    # The SDK's own warnings may quote request parameters (queries): keep them off stderr.
    logging.getLogger("mcp").setLevel(logging.CRITICAL)
    serve_stdio(
        root_list,
        cache_dir,
        scoped=bool(roots),
        index=not no_index,
        follow_symlinks=follow_symlinks,
        redact=not no_redact,
        beside=beside,
        hub=configured_hub(),  # a search asks the team hub too (SPEC S6)
    )
