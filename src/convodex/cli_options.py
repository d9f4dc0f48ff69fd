"""Options and paths shared by the CLI modules (kept apart so they never import cli.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])
DEMO_ROOT = Path(__file__).parent / "demo"


def root_options(fn: F) -> F:
    fn = click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        help="Cache root (default: $CONVODEX_CACHE_HOME or the platform cache dir).",
    )(fn)
    fn = click.option(
        "--root",
        "roots",
        multiple=True,
        type=click.Path(path_type=Path),
        help="A directory scanned recursively for transcripts (repeatable).",
    )(fn)
    return fn
