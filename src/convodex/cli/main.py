"""The ``convodex`` group. Thin: subcommands load only when invoked, so a search pays
for the search's imports and nothing else (no server, web, MCP or indexer code)."""

from __future__ import annotations

import importlib
from typing import Any

import click

from convodex.errors import ConvodexError

# command name -> "module:attribute"; the module is imported on first use.
COMMANDS = {
    "index": "convodex.cli.search:index",
    "search": "convodex.cli.search:search",
    "recent": "convodex.cli.recent:recent",
    "similar": "convodex.cli.recent:similar",
    "demo": "convodex.cli.search:demo",
    "sources": "convodex.cli.sources:sources",
    "serve": "convodex.cli.serve:serve",
    "mcp": "convodex.cli.mcp:mcp",
    "doctor": "convodex.cli.ops:doctor",
    "catalogs": "convodex.cli.ops:catalogs",
    "server": "convodex.cli.server:server",
    "show": "convodex.cli.session:show",
    "export": "convodex.cli.session:export",
    "resume": "convodex.cli.session:resume",
    "pick": "convodex.cli.pick:pick",
    "recall": "convodex.cli.recall:recall",
    "install": "convodex.cli.install:install",
    "uninstall": "convodex.cli.install:uninstall",
    "sync": "convodex.cli.sync:sync",
    "service": "convodex.cli.service:service",
}


class _LazyGroup(click.Group):
    """Loads each subcommand's module on demand; turns convodex errors into one line on
    stderr and exit status 1, never a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConvodexError as exc:
            fail(str(exc))


def fail(message: str) -> None:
    """One ``error: …`` line on stderr and exit status 1."""
    click.echo(f"error: {message}", err=True)
    raise SystemExit(1)


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from convodex import __version__

    click.echo(f"convodex, version {__version__}")
    ctx.exit()


@click.group(cls=_LazyGroup)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show the version and exit.",
)
def main() -> None:
    """Search every conversation you and your agents have had."""
