"""``convodex pick``: the interactive picker (SPEC L16). Thin: the Textual app picks,
then this command carries the pick out once the terminal is back (resume takes it
over; show pages; export writes a file; ``--print`` prints the ref)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

from convodex.cli.options import demo_cache_dir, root_options, roots_or_defaults, shows_demo
from convodex.cli.stopping import Stopped, stops_cleanly

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future

    from convodex.catalog.service import HistoryService
    from convodex.tui.screen import FirstFrame
    from convodex.tui.state import Filters, FirstLook


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
@stops_cleanly("pick")
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
    With no words (nothing typed, or filters only: agent:codex) it lists the recent
    sessions, newest first, to pick from the same way. Typing always edits the query
    (the query language of `convodex search`); Up and Down move through the hits.
    Enter resumes the session in its agent; Tab lists what else to do with the hit.
    Ctrl-S shows the session at the hit, Ctrl-X exports it as Markdown, Ctrl-Y copies
    its resume command (all three come back to the picker). Ctrl-T chooses the agent
    and Ctrl-P the project from a list, Ctrl-O cycles the order, Ctrl-F the kinds. Esc
    quits and prints nothing.
    """
    from convodex.tui.screen import early_screen, posix_driver

    query = " ".join(words)
    # The search box at once, before the catalog's modules load.
    with early_screen(query) as screen:
        from convodex.catalog.demo import DEMO_ROOT
        from convodex.catalog.plan import agent_name
        from convodex.catalog.service import Background, HistoryService
        from convodex.tui.state import PAGE, Filters, first_look, first_page, search_thread

        scoped = bool(roots)
        # Without --root, searches see the whole catalog: the default roots only matter to
        # background indexing, which starts after the first results (finding them imports
        # every format's reader, which the first search does not need).
        root_list = roots_or_defaults(roots) if scoped else []
        # No sessions of the user's anywhere: the bundled demo, in its own catalog, as
        # ``serve`` (``make run``) shows it; its answers say "demo".
        demo = not scoped and shows_demo(cache_dir)
        if demo:
            cache_dir = demo_cache_dir(cache_dir)
        background = Background(listen_for_hints=False)
        cwd = os.getcwd()
        filters = Filters.start(agent_name(agent) if agent else None, here, sort, cwd)
        with HistoryService.open(
            cache_dir,
            root_list,
            scoped=scoped,
            background=background,
            follow_symlinks=follow_symlinks,
        ) as service:
            # The first search (no words: the recent sessions) starts at once, on the
            # picker's search thread.
            pool = search_thread()
            limit = first_page(screen.height) if screen is not None else PAGE
            first = pool.submit(first_look, service, filters.request(query, cwd, limit))
            if screen is not None:
                show_first_results(screen, first, query, filters)

            def start_indexing() -> None:
                if demo:
                    service.roots = [DEMO_ROOT.resolve()]
                elif not scoped:
                    service.roots = roots_or_defaults(())
                service.start()

            if not no_index:
                helpers_can_start()
            from convodex.tui.picker import Picker

            app = Picker(
                service,
                query,
                print_only=print_only,
                filters=filters,
                index=not no_index,
                cwd=cwd,
                pool=pool,
                first=first,
                start=start_indexing,
                show=lambda ref: show_at(service, ref),
                export=lambda ref: export_here(service, ref),
                driver_class=screen.driver_class() if screen is not None else posix_driver(),
            )
            try:
                outcome = app.run()
            finally:
                app.close()
            if outcome is None:
                return
            if outcome.signal is not None:
                raise Stopped(outcome.signal)  # the terminal is back: now say so
            if outcome.copied:
                click.echo(outcome.copied)
            if outcome.ref is None or outcome.action == "quit":
                return
            if outcome.action == "print":
                click.echo(outcome.ref)
                return
            carry_out(service, outcome.action, outcome.ref, cache_dir)


def helpers_can_start() -> None:
    """Start multiprocessing's resource tracker now, while stderr is the terminal.

    Background indexing of a big history reads in a helper process, and the first one
    starts the tracker, handing it this process's stderr; under Textual that is a
    capture without a file descriptor (-1), the start fails and the scan with it
    (only the rescan a minute later retried, on the path that failed already).
    """
    from multiprocessing import resource_tracker

    try:
        resource_tracker.ensure_running()
    except OSError:
        pass  # the indexer reads in this process instead


def show_first_results(
    screen: FirstFrame, first: Future[FirstLook], query: str, filters: Filters
) -> None:
    """The whole picker with the first results, drawn as soon as they are in (by the
    search thread); Textual loads once they are on screen (loading it meanwhile would
    slow the drawing down), or after ``config.PICK_FIRST_WAIT`` of a slow search: it
    then shows them itself."""
    import os
    import threading

    from convodex import config
    from convodex.tui.first_frame import Frame
    from convodex.tui.state import settled

    home = os.path.expanduser("~")
    drawn = threading.Event()

    def draw(done: Future[FirstLook]) -> None:
        try:
            frame = Frame(screen.width, screen.height, query, filters, settled(done), home)
            screen.paint(frame.rows())
        except Exception:  # never a traceback over the screen:
            pass  # Textual shows the results all the same, a moment later
        finally:
            drawn.set()

    first.add_done_callback(draw)
    drawn.wait(config.PICK_FIRST_WAIT.value() / 1000)


def show_at(service: HistoryService, ref: str) -> Callable[[], None]:
    """The ref's session as ``show`` prints it (read now, on the picker's search thread),
    and how to page it opened at the hit's message (a session's ref: at its start), on
    the terminal (also when stdout is a pipe), once the picker has handed it over."""
    from convodex.cli.session import page, show_text

    target = service.resolve(ref)
    document = service.document(target)
    text = show_text(document, "text", False, target.message_index, True)
    line = None
    if target.message_index is not None:
        marker = f"▶ #{target.message_index} "
        line = next((n for n, row in enumerate(text.splitlines(), 1) if marker in row), None)

    def pager() -> None:
        try:
            tty = os.open("/dev/tty", os.O_WRONLY)
        except OSError:
            tty = 2
        try:
            page(text, True, at_line=line, terminal=tty)
        finally:
            if tty != 2:
                os.close(tty)

    return pager


def export_here(service: HistoryService, ref: str) -> str:
    """``export``'s Markdown of the session into ``./<session id>.md``; what it did."""
    from convodex.cli.session import write_private
    from convodex.sessions.export import export

    document = service.document(service.resolve(ref))
    name = re.sub(r"[^A-Za-z0-9._-]", "_", document.session_id)[:120] + ".md"
    path = Path.cwd() / name
    write_private(path, export(document, "markdown"))
    from convodex.cli.hits import counted

    return f"exported {counted(document.message_count, 'message')} to {path}"


def carry_out(service: HistoryService, action: str, ref: str, cache_dir: Path | None) -> None:
    """What Enter means once the terminal is back: the same as ``resume``. (Show,
    export and copy happen in the picker, which comes back after them.)"""
    from convodex.cli.session import run_resume

    if action == "resume":
        run_resume(service, service.resolve(ref), None, 0, False, False, cache_dir)
