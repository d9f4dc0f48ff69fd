"""`convodex server …`: the conversation server's commands (SPEC S)."""

from __future__ import annotations

import click


@click.group(name="server")
def server() -> None:
    """Run and administer the multi-account conversation server."""
