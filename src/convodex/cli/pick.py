"""``convodex pick``: the interactive picker (SPEC L16). Thin: the Textual app picks,
then this command carries the pick out once the terminal is back (resume takes it
over; show pages; export writes a file; ``--print`` prints the ref)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from convodex.catalog.service import Background, HistoryService
from convodex.cli.options import root_options, roots_or_defaults


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("words", nargs=-1)
@click.option("--agent", help="Start with this agent's sessions only.")
@click.option("--here", is_flag=True, help="Start with this directory's project only.")
@click.option(
    "--sort",
    type=click.Choice(["relevance", "newest", "oldest"]),
    default="relevance",
    show_default=True,
)
@click.option("--print", "print_only", is_flag=True, help="Print the chosen ref instead of acting.")
@click.option("--no-index", is_flag=True, help="Do not index in the background.")
@root_options
def pick(
    words: tuple[str, ...],
    agent: str | None,
    here: bool,
    sort: str,
    print_only: bool,
    no_index: bool,
    roots: tuple[str, ...],
    follow_symlinks: bool,
    cache_dir: Path | None,
) -> None:
    """Search interactively and pick a hit: Enter resumes its session.

    \b
    Type to search (the query language of `convodex search`); Down or Tab moves to the
    results. Enter resumes the session in its agent, s shows it, e exports it as
    Markdown, y copies its resume command, Esc quits and prints nothing. Ctrl-T cycles
    the agent, Ctrl-P toggles this project, Ctrl-O the order, Ctrl-F the kinds.
    """
    import os

    from convodex.catalog.plan import agent_name
    from convodex.tui.state import Filters, search_thread

    root_list = roots_or_defaults(roots)
    background = Background(listen_for_hints=False)
    query = " ".join(words)
    filters = Filters.start(agent_name(agent) if agent else None, here, sort)
    with HistoryService.open(
        cache_dir,
        root_list,
        scoped=bool(roots),
        background=background,
        follow_symlinks=follow_symlinks,
    ) as service:
        # The first search runs while Textual loads: its answer is ready for the first frame.
        pool = search_thread()
        request = filters.request(query, os.getcwd())
        first = pool.submit(service.search, request) if query.strip() else None
        from convodex.tui.picker import Picker

        app = Picker(
            service,
            query,
            print_only=print_only,
            filters=filters,
            index=not no_index,
            pool=pool,
            first=first,
        )
        try:
            outcome = app.run()
        finally:
            app.close()
        if outcome is None:
            return
        if outcome.copied:
            click.echo(outcome.copied)
        hit = outcome.hit
        if hit is None or outcome.action == "quit":
            return
        if outcome.action == "print":
            click.echo(hit.ref)
            return
        carry_out(service, outcome.action, hit.ref, cache_dir)


def carry_out(service: HistoryService, action: str, ref: str, cache_dir: Path | None) -> None:
    """What Enter, ``s`` and ``e`` mean, the same as ``resume``, ``show`` and ``export``."""
    from convodex.cli.hits import use_color
    from convodex.cli.session import page, run_resume, show_text, write_private
    from convodex.sessions.render import export

    target = service.resolve(ref)
    if action == "resume":
        run_resume(service, target, None, 0, False, False, cache_dir)
        return
    document = service.document(target)
    if action == "show":
        color = use_color("auto")
        page(show_text(document, "text", False, target.message_index, color), color)
        return
    name = re.sub(r"[^A-Za-z0-9._-]", "_", document.session_id)[:120] + ".md"
    path = Path.cwd() / name
    write_private(path, export(document, "markdown"))
    click.echo(f"exported {document.message_count} messages to {path}")
