"""Options and output shared by the CLI commands: one ``--cache-dir``, one ``--json``,
one JSON printer, and one place that decides the roots."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from convodex.cli.plain import roots_or_defaults as roots_or_defaults

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService

F = TypeVar("F", bound=Callable[..., Any])


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
    """``filter_options``' values as ``SearchRequest`` fields (``--here``: the user's
    directory, the client's when a warm service runs the command)."""
    from convodex.warm.context import current_dir

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
    out["projects"] = (*projects, current_dir()) if options.pop("here") else projects
    return out


def mode_option(fn: F) -> F:
    """``--mode auto|lexical|hybrid`` (L19): words only, or words and meaning."""
    return click.option(
        "--mode",
        type=click.Choice(["auto", "lexical", "hybrid"]),
        default="auto",
        show_default=True,
        help="hybrid: words and meaning (needs convodex[semantic]); auto: hybrid when "
        "the catalog holds embeddings.",
    )(fn)


def refresh_option(fn: F) -> F:
    """``--no-refresh``: answer from the catalog as it is (L17)."""
    return click.option(
        "--no-refresh",
        "no_refresh",
        is_flag=True,
        help="Skip the check for transcripts changed since the last index.",
    )(fn)


def refreshed(service: Any, skip: bool) -> None:
    """Bring in what changed since the last index (within its budget), and say on
    stderr in one line what the answer may be missing."""
    if skip:
        return
    from convodex.cli.hits import describe_refresh

    note = describe_refresh(service.refresh())
    if note:
        click.echo(note, err=True)


def emit_json(data: Any) -> None:
    """Print a result model (or plain data holding models) as one line of JSON."""
    from convodex.models import encode

    click.echo(encode(data).decode("utf-8"))


def roots_or_demo(given: tuple[str, ...]) -> tuple[list[Path], bool]:
    """Like ``roots_or_defaults``, with the bundled demo corpus standing in when no
    default root holds a session; says whether it did."""
    from convodex.sources.discover import scan

    roots = roots_or_defaults(given)
    if given or any(r.is_dir() and next(scan(r), None) is not None for r in roots):
        return roots, False
    from convodex.catalog.demo import DEMO_ROOT

    return [DEMO_ROOT.resolve()], True


def shows_demo(cache_dir: Path | None) -> bool:
    """Whether an unscoped surface (the picker) shows the bundled demo: the user's
    catalog holds no session outside it and no default root holds one (``serve``'s
    rule; a catalog of the user's sessions answers without the scan)."""
    from convodex import config
    from convodex.catalog.db import roots_with_sources
    from convodex.catalog.demo import without_demo

    if without_demo(roots_with_sources(config.catalog_path(cache_dir))):
        return False
    return roots_or_demo(())[1]


def demo_cache_dir(cache_dir: Path | None) -> Path:
    """The demo corpus's own catalog, beside (never inside) the user's: demo sessions
    must not outrank the user's own later, nor stay among the roots a reindex keeps.
    A cache directory that is the demo's already stays itself."""
    from convodex import config

    root = config.cache_root(cache_dir)
    return root if root.name == "demo" else root / "demo"


@contextlib.contextmanager
def history(
    cache_dir: Path | None,
    roots: Sequence[Path] = (),
    *,
    scoped: bool = False,
    follow_symlinks: bool = False,
) -> Iterator[HistoryService]:
    """The service a command reads: the catalog under ``cache_dir`` opened here, or,
    when a warm service runs this command for a client, that service (SPEC L20)."""
    from convodex.warm.context import CURRENT

    warm = CURRENT.get()
    if warm is not None:
        warm.check(cache_dir, roots, follow_symlinks)
        yield warm.service
        return
    from convodex.catalog.service import HistoryService

    with HistoryService.open(
        cache_dir, list(roots), scoped=scoped, follow_symlinks=follow_symlinks
    ) as service:
        yield service
