"""Options and paths shared by the CLI modules (kept apart so they never import cli.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from convodex.sources.discover import default_roots, resolve_root, scan

F = TypeVar("F", bound=Callable[..., Any])
DEMO_ROOT = Path(__file__).parents[1] / "demo"


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


def roots_or_defaults(given: tuple[Path, ...]) -> list[Path]:
    """The roots a command works on: those given (which must exist), else the defaults."""
    if given:
        return [resolve_root(p) for p in given]
    return [resolve_root(p, must_exist=False) for p in default_roots()]


def roots_or_demo(given: tuple[Path, ...]) -> tuple[list[Path], bool]:
    """Like ``roots_or_defaults``, with the bundled demo corpus standing in when no
    default root holds a session; says whether it did."""
    roots = roots_or_defaults(given)
    if given or any(r.is_dir() and next(scan(r), None) is not None for r in roots):
        return roots, False
    return [DEMO_ROOT.resolve()], True
