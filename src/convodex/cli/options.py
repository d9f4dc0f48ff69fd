"""Options and output shared by the CLI commands: one ``--cache-dir``, one ``--json``,
one JSON printer, and one place that decides the roots."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])
DEMO_ROOT = Path(__file__).parents[1] / "demo"


def cache_dir_option(fn: F) -> F:
    return click.option(
        "--cache-dir",
        type=click.Path(path_type=Path),
        help="Cache root (default: $CONVODEX_CACHE_HOME or the platform cache dir).",
    )(fn)


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")(fn)


def color_option(fn: F) -> F:
    """``--color auto|always|never``: marks on a terminal unless ``NO_COLOR`` is set."""
    return click.option(
        "--color",
        type=click.Choice(["auto", "always", "never"]),
        default="auto",
        show_default=True,
        help="Mark matched words (auto: on a terminal, unless NO_COLOR is set).",
    )(fn)


def root_options(fn: F) -> F:
    """``--root PATH[:format]`` (repeatable), ``--follow-symlinks`` and ``--cache-dir``."""
    fn = cache_dir_option(fn)
    fn = click.option(
        "--follow-symlinks",
        is_flag=True,
        help="Also read transcripts that are symbolic links to files outside their root "
        "(by default such a link is a failed source, never read).",
    )(fn)
    return click.option(
        "--root",
        "roots",
        multiple=True,
        help="A directory scanned recursively for transcripts, PATH or PATH:format "
        "(repeatable; default: every default root).",
    )(fn)


def filter_options(fn: F) -> F:
    """The filters of L13, shared by ``search`` and ``recent`` (``--agent`` … ``--session``);
    the command receives them as keyword arguments ``request_filters`` turns into
    ``SearchRequest`` fields."""
    options = [
        click.option(
            "--agent", "agents", multiple=True, help="Only this agent's sessions (repeatable)."
        ),
        click.option(
            "--project",
            "projects",
            multiple=True,
            help="Only sessions in this workspace: a path (or below it) or its last name "
            "(repeatable).",
        ),
        click.option(
            "--here", is_flag=True, help="Only sessions of the current directory's project."
        ),
        click.option(
            "--since", help="Only from then on: 2026-11-01, an ISO time, 7d, 12h, yesterday …"
        ),
        click.option("--until", help="Only until then (a date includes that day)."),
        click.option("--tool", "tools", multiple=True, help="Only this tool's calls and results."),
        click.option(
            "--role", "roles", multiple=True, help="user, assistant or tool (repeatable)."
        ),
        click.option(
            "--session", "sessions", multiple=True, help="Only this session (id or prefix)."
        ),
        click.option(
            "--include-subagents", is_flag=True, help="Also sub-agent and headless sessions."
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def request_filters(options: dict[str, Any]) -> dict[str, Any]:
    """``filter_options``' values as ``SearchRequest`` fields (``--here``: the cwd)."""
    import os

    out = {
        name: options.pop(name)
        for name in (
            "agents",
            "since",
            "until",
            "tools",
            "roles",
            "sessions",
            "include_subagents",
        )
    }
    projects = options.pop("projects")
    out["projects"] = (*projects, os.getcwd()) if options.pop("here") else projects
    return out


def emit_json(data: Any) -> None:
    """Print a result model (or plain data holding models) as one line of JSON."""
    from convodex.models import encode

    click.echo(encode(data).decode("utf-8"))


def roots_or_defaults(given: tuple[str, ...]) -> list[Path]:
    """The roots a command works on: those given (which must exist), else the defaults."""
    from convodex.sources.roots import default_roots, resolve_root

    if given:
        return [resolve_root(p) for p in given]
    return [resolve_root(p, must_exist=False) for p in default_roots()]


def roots_or_demo(given: tuple[str, ...]) -> tuple[list[Path], bool]:
    """Like ``roots_or_defaults``, with the bundled demo corpus standing in when no
    default root holds a session; says whether it did."""
    from convodex.sources.discover import scan

    roots = roots_or_defaults(given)
    if given or any(r.is_dir() and next(scan(r), None) is not None for r in roots):
        return roots, False
    return [DEMO_ROOT.resolve()], True
