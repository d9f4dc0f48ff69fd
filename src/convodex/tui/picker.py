"""``convodex pick``: the full-screen picker (SPEC L16), built on Textual. Thin.

Searches go through ``HistoryService.search`` with the same ``SearchRequest`` as every
other surface (a query of no words, empty or filters only, lists the recent sessions
``convodex recent`` lists: something to pick from the first moment), on one worker
thread, so typing never waits for a search and a search never waits for indexing:
progress shows in the status line, and results refresh as the index fills. The app
only picks; what to do with the pick (resume, show, export) happens after it has left
the terminal, in the CLI.

``convodex pick`` shows its first results before this module is even imported (see
``screen`` and ``first_frame``); the app then starts with those results (``first``)
and, through the driver it is given, takes the screen over without clearing it. It
uses the terminal's own colours (the ansi-dark theme), which the first frame matches.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.timer import Timer
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from convodex.catalog.plan import SearchRequest
from convodex.catalog.service import HistoryService
from convodex.errors import ConvodexError
from convodex.models import AroundResult, Hit, Progress, RecentSession, SearchPage
from convodex.text.query import Query, parse
from convodex.tui import view
from convodex.tui.choices import Choices
from convodex.tui.clipboard import copy_to_system_clipboard
from convodex.tui.screen import PLACEHOLDER
from convodex.tui.state import (
    KIND_SETS,
    PAGE,
    SORTS,
    Filters,
    FirstLook,
    outcome,
    preview_of,
    search_thread,
    settled,
)

if TYPE_CHECKING:
    from textual.driver import Driver

Action = Literal["resume", "show", "export", "print", "quit"]
DEBOUNCE_SECONDS = 0.12
POLL_SECONDS = 0.5
REFRESH_SECONDS = 1.0  # at most this often, results are refreshed while the index fills


@dataclass
class Outcome:
    """What the person picked, for the CLI to carry out once the terminal is back."""

    action: Action
    # The hit picked; None for a recent session (``ref`` names it) or a quit.
    hit: Hit | None = None
    # A resume command ``y`` could not put on a clipboard: printed on exit.
    copied: str | None = None
    # The signal (SIGINT, SIGTERM) that ended the picker, if one did.
    signal: int | None = None
    # What ``show``, ``export`` and ``resume`` accept: the hit's ref or the session's.
    ref: str | None = None


def text(spans: list[view.Span]) -> Text:
    return Text.assemble(*spans)


class Picker(App[Outcome]):
    """Search as you type, results grouped per session, a preview, then a pick."""

    TITLE = "convodex pick"
    ENABLE_COMMAND_PALETTE = False
    CSS = f"""
    #query {{ dock: top; }}
    #panes {{ height: 1fr; }}
    #results {{ width: {view.RESULTS_PERCENT}%; border: none; overflow-y: scroll; }}
    #preview-pane {{
        width: {100 - view.RESULTS_PERCENT}%; border-left: solid $primary; padding: 0 1;
    }}
    #status {{ height: 1; background: $boost; color: $text-muted; padding: 0 1; }}
    """
    # The search box keeps the focus: typing always edits the query (every key of a
    # text box works in it, ``/`` included); the results move under it, and actions
    # are Enter, Tab (a list of them) and control keys, never plain letters.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "quit_quietly", "Quit", priority=True),
        Binding("ctrl+c", "quit_quietly", "Quit", show=False, priority=True),
        Binding("down", "move(1)", "Down", show=False, priority=True),
        Binding("up", "move(-1)", "Up", show=False, priority=True),
        Binding("pagedown", "move(10)", "Page down", show=False, priority=True),
        Binding("pageup", "move(-10)", "Page up", show=False, priority=True),
        Binding("tab", "actions", "Actions", priority=True),
        # In the status line (``view.ACTIONS``), not the footer as well.
        Binding("ctrl+s", "show", "Show", show=False, priority=True),
        Binding("ctrl+x", "export", "Export", show=False, priority=True),
        Binding("ctrl+y", "copy", "Copy", show=False, priority=True),
        Binding("ctrl+t", "choose_agent", "Agent", priority=True),
        Binding("ctrl+p", "choose_project", "Project", priority=True),
        Binding("ctrl+o", "cycle_sort", "Sort", priority=True),
        Binding("ctrl+f", "cycle_kinds", "Kinds", priority=True),
    ]

    def __init__(
        self,
        service: HistoryService,
        query: str = "",
        *,
        print_only: bool = False,
        filters: Filters | None = None,
        index: bool = True,
        cwd: str | None = None,
        pool: ThreadPoolExecutor | None = None,
        first: Future[FirstLook] | None = None,
        start: Callable[[], object] | None = None,
        driver_class: type[Driver] | None = None,
        show: Callable[[str], Callable[[], None]] | None = None,
        export: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__(driver_class=driver_class)
        self.theme = "ansi-dark"  # the terminal's own colours, as the first frame draws
        self.service = service
        self.initial_query = query
        self.print_only = print_only
        self.index = index
        self.cwd = cwd or os.getcwd()
        self.home = os.path.expanduser("~")
        self.filters = filters or Filters()
        # A search already running for ``query`` (started before Textual loaded).
        self.first = first
        # The query of the latest search (the box's value when it ran).
        self.searched: str | None = query if first is not None else None
        # How background indexing starts (default: the service's own ``start``).
        self.start_indexing = start or service.start
        # A row's preview read ahead (the first row's, with the first search).
        self.ready_preview: tuple[view.Row, AroundResult] | None = None
        self.previewed: view.Row | None = None
        self.hits: dict[str, Hit] = {}
        # The recent sessions listed for a query of no words (then there is no hit).
        self.sessions: dict[str, RecentSession] = {}
        self.query_parsed: Query | None = None
        self.progress_state: Progress | None = None
        self.error: str | None = None
        self.summary = ""
        self.copied: str | None = None
        self.generation = 0
        self.shown_revision = -1
        self.last_search = 0.0
        self.started = False
        self._debounce: Timer | None = None
        self._ui_loop: asyncio.AbstractEventLoop | None = None
        self._pool = pool or search_thread()
        self._signals: dict[int, Any] = {}
        # Show (read on the search thread, then paged with the terminal handed over)
        # and export (on the search thread, saying what it wrote) of a ref; both come
        # back here.
        self.show_session = show
        self.export_session = export

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Input(
            value=self.initial_query, placeholder=PLACEHOLDER, id="query", select_on_focus=False
        )
        with Horizontal(id="panes"):
            results = OptionList(id="results")
            results.can_focus = False  # the search box keeps the keys
            yield results
            with VerticalScroll(id="preview-pane"):
                yield Static("", id="preview")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self._ui_loop = asyncio.get_running_loop()
        self._catch_signals(self._ui_loop)
        self.query_one("#query", Input).focus()
        self.submit(self._agents, self._set_agents)
        if self.first is not None:
            self.generation += 1
            generation = self.generation
            self.last_search = time.monotonic()
            if self.first.done():  # shown before the first frame: nothing flickers
                self.show_first(generation, settled(self.first))
            else:
                self._on_done(self.first, lambda look: self.show_first(generation, look))
        else:
            self.search_now()  # no words: the recent sessions
        self.set_interval(POLL_SECONDS, self.poll)
        self.refresh_status()

    def _catch_signals(self, loop: asyncio.AbstractEventLoop) -> None:
        """SIGINT and SIGTERM end the app as Esc does, so that Textual gives the terminal
        back first; the CLI then says so in one line and exits with the signal's status
        (SPEC X10). An exception raised into Textual's loop instead left the line on
        the alternate screen, which Textual then left."""

        def stop(signum: int, _frame: object) -> None:
            loop.call_soon_threadsafe(self.exit, Outcome("quit", None, self.copied, signum))

        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._signals[sig] = signal.signal(sig, stop)
            except ValueError:
                return  # not the main thread: signals stay where they were

    # -- background work ------------------------------------------------------------------

    def submit(self, work: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """Run ``work`` on the search thread, then ``done`` with its result on the UI."""
        try:
            future = self._pool.submit(work)
        except RuntimeError:
            return  # shutting down
        self._on_done(future, done)

    def _on_done(self, future: Future[Any], done: Callable[[Any], None]) -> None:
        def finished(future: Future[Any]) -> None:
            result = outcome(future)
            loop = self._ui_loop
            if loop is not None:
                try:
                    loop.call_soon_threadsafe(self._deliver, done, result)
                except RuntimeError:
                    pass  # the app closed meanwhile

        future.add_done_callback(finished)

    def _deliver(self, done: Callable[[Any], None], result: Any) -> None:
        if self.is_running:
            done(result)

    def close(self) -> None:
        """Wait for the search thread (after ``run``): the service closes next."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _agents(self) -> list[str]:
        return self.service.agents()

    def _set_agents(self, found: Any) -> None:
        if isinstance(found, list):
            self.filters.set_agents(found)
        self.refresh_status()

    def _after_first_search(self) -> None:
        """Background indexing starts once the first answer is on screen (it competes
        with it for the CPU), on the search thread (it owns the connection until then)."""
        if self.started or not self.index:
            return
        self.started = True
        self.submit(self.start_indexing, lambda _: None)

    def request(self) -> SearchRequest:
        return self.filters.request(self.query_one("#query", Input).value, self.cwd)

    def search_now(self) -> None:
        self.generation += 1
        generation = self.generation
        request = self.request()
        self.searched = request.query
        self.last_search = time.monotonic()
        self.submit(
            lambda: self.service.search(request), lambda page: self.show_page(generation, page)
        )

    def poll(self) -> None:
        self.submit(self.service.progress, self._progress)

    def _progress(self, state: Any) -> None:
        if not isinstance(state, Progress):
            return
        self.progress_state = state
        self.refresh_status()
        stale = state.revision != self.shown_revision and self.shown_revision >= 0
        due = time.monotonic() - self.last_search > REFRESH_SECONDS
        if stale and due:
            self.search_now()  # the index grew: show what it has now

    # -- results --------------------------------------------------------------------------

    def show_first(self, generation: int, look: Any) -> None:
        if not isinstance(look, FirstLook):
            self.show_page(generation, look)  # the search failed
            return
        page = look.page
        rows: list[view.Row] = []
        if isinstance(page, SearchPage):
            rows = [*page.hits, *view.listed(page)]
        if rows and look.preview is not None:
            self.ready_preview = (rows[0], look.preview)
        self.show_page(generation, page)
        if isinstance(page, SearchPage) and page.next_cursor and len(page.hits) < PAGE:
            # A screenful came first: the whole page once the app is on screen.
            self.call_after_refresh(self.search_now)

    def show_page(self, generation: int, page: Any) -> None:
        if generation != self.generation:
            return  # a newer search is under way
        results = self.query_one("#results", OptionList)
        keep = results.highlighted_option.id if results.highlighted_option else None
        results.clear_options()
        self.hits.clear()
        self.sessions.clear()
        self.error = None
        if isinstance(page, ConvodexError):
            self.error = str(page)
            self.summary = ""
        elif isinstance(page, SearchPage):
            # What to mark in the hits (a listing has no words to mark).
            self.query_parsed = parse(self.request().query) if page.hits else None
            self.progress_state = page.progress
            self.shown_revision = page.revision
            self.fill(results, page.hits)
            self.list_sessions(results, view.listed(page) if not page.hits else [])
            self.summary = view.page_summary(page)
        else:
            self.summary = ""
            self.query_one("#preview", Static).update("")
        rows = self.rows()
        if keep in rows:
            results.highlighted = results.get_option_index(keep)
        elif rows:
            results.highlighted = results.get_option_index(next(iter(rows)))
        else:
            self.query_one("#preview", Static).update("")  # no hit: nothing to preview
            self.previewed = None
        ready, self.ready_preview = self.ready_preview, None
        if ready is not None and self.highlighted_row() is ready[0]:
            self.show_preview(*ready)  # in the same frame as the results
        self.refresh_status()
        self._after_first_search()

    def fill(self, results: OptionList, hits: list[Hit]) -> None:
        options: list[Option | None] = []
        for n, members in enumerate(view.grouped(hits)):
            if n:
                options.append(None)
            header = Text(view.session_header(members[0], self.home), style="bold")
            options.append(Option(header, id=f"s{n}", disabled=True))
            for hit in members:
                key = f"h{len(self.hits)}"
                self.hits[key] = hit
                options.append(Option(text(view.hit_line(hit, self.query_parsed)), id=key))
        results.add_options(options)

    def list_sessions(self, results: OptionList, sessions: list[RecentSession]) -> None:
        """The recent sessions, a row each (title · agent · project · date)."""
        options = []
        for session in sessions:
            key = f"r{len(self.sessions)}"
            self.sessions[key] = session
            options.append(Option(Text(view.session_header(session, self.home)), id=key))
        results.add_options(options)

    def rows(self) -> dict[str, view.Row]:
        """The rows a person can pick, by option id: the hits, or the recent sessions."""
        return {**self.hits, **self.sessions}

    def highlighted_row(self) -> view.Row | None:
        """The highlighted row: a hit, or a recent session."""
        option = self.query_one("#results", OptionList).highlighted_option
        return None if option is None or option.id is None else self.rows().get(option.id)

    def selected(self) -> Hit | None:
        """The highlighted hit (None over a recent session)."""
        row = self.highlighted_row()
        return row if isinstance(row, Hit) else None

    @on(OptionList.OptionHighlighted)
    def preview(self, event: OptionList.OptionHighlighted) -> None:
        row = self.rows().get(event.option.id or "")
        if row is None or row is self.previewed:
            return
        self.submit(
            lambda: preview_of(self.service, row), lambda found: self.show_preview(row, found)
        )

    def show_preview(self, row: view.Row, found: Any) -> None:
        if self.highlighted_row() is not row:
            return
        context = found if isinstance(found, AroundResult) else None
        spans = view.preview(row, context, self.query_parsed, self.home)
        self.query_one("#preview", Static).update(text(spans))
        self.previewed = row

    def refresh_status(self) -> None:
        line = view.status(self.error, self.summary, self.progress_state, self.filters)
        self.query_one("#status", Static).update(line)

    # -- input and keys -------------------------------------------------------------------

    @on(Input.Changed, "#query")
    def typed(self, event: Input.Changed) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        if event.value == self.searched:
            return  # the results shown answer it already (the box's first value, an undo)
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, self.search_now)

    @on(Input.Submitted, "#query")
    def submitted(self, event: Input.Submitted) -> None:
        self.pick("resume")

    @on(OptionList.OptionSelected, "#results")
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.pick("resume")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Over a list (``Choices``) the keys are the list's: arrows, Enter, Esc."""
        return not isinstance(self.screen, Choices)

    def pick(self, action: Action) -> None:
        row = self.highlighted_row()
        if row is None:
            return
        if self.print_only:
            action = "print"
        hit = row if isinstance(row, Hit) else None
        self.exit(Outcome(action, hit, self.copied, ref=row.ref))

    def action_move(self, by: int) -> None:
        """Up and down the rows (session headers are skipped), the query kept."""
        results = self.query_one("#results", OptionList)
        keys = list(self.rows())
        if not keys:
            return
        option = results.highlighted_option
        at = keys.index(option.id) if option is not None and option.id in keys else 0
        results.highlighted = results.get_option_index(keys[max(0, min(len(keys) - 1, at + by))])

    def action_actions(self) -> None:
        hit = self.highlighted_row()
        if hit is None:
            return
        first = ("print", "print its ref and quit") if self.print_only else ("resume", "resume")
        options = [
            first,
            ("show", "show the session (at this hit)"),
            ("export", "export it as Markdown"),
            ("copy", "copy its resume command"),
            ("similar", "list the sessions most like it"),
        ]
        self.push_screen(Choices(view.hit_ref(hit), options, None), self._act)

    def _act(self, chosen: str | None) -> None:
        acts: dict[str, Callable[[], None]] = {
            "resume": lambda: self.pick("resume"),
            "print": lambda: self.pick("print"),
            "show": self.action_show,
            "export": self.action_export,
            "copy": self.action_copy,
            "similar": self.action_similar,
        }
        if chosen in acts:
            acts[chosen]()

    def action_similar(self) -> None:
        """The sessions most like the highlighted one (L19), listed as recent ones are:
        pick one, or type to search again."""
        row = self.highlighted_row()
        if row is None:
            return
        self.generation += 1
        generation, path, service = self.generation, row.session_path, self.service
        self.submit(
            lambda: view.similar_page(service.similar(path), service.progress()),
            lambda page: self.show_page(generation, page),
        )

    def action_show(self) -> None:
        """The session in the pager, opened at the hit; back to the picker after."""
        row = self.highlighted_row()
        if row is None or self.show_session is None:
            return
        show, ref = self.show_session, row.ref
        self.submit(lambda: show(ref), self._page)

    def _page(self, pager: Any) -> None:
        if isinstance(pager, ConvodexError):
            self.notify(str(pager), severity="error")
            return
        try:
            with self.suspend():
                pager()
        except SuspendNotSupported:
            self.notify("this terminal cannot hand the screen to a pager", severity="error")

    def action_export(self) -> None:
        row = self.highlighted_row()
        if row is None or self.export_session is None:
            return
        export, ref = self.export_session, row.ref

        def said(done: Any) -> None:
            failed = isinstance(done, ConvodexError)
            self.notify(str(done), severity="error" if failed else "information")

        self.submit(lambda: export(ref), said)

    def action_copy(self) -> None:
        hit = self.highlighted_row()
        if hit is None:
            return
        if not hit.resume_command:
            self.notify(f"{hit.agent.replace('_', '-')} has no resume command", severity="warning")
            return
        if copy_to_system_clipboard(hit.resume_command):
            self.notify("resume command copied")
            return
        self.copy_to_clipboard(hit.resume_command)  # OSC 52, where the terminal allows it
        self.copied = hit.resume_command
        self.notify("no clipboard here: the command is printed when you quit")

    def action_quit_quietly(self) -> None:
        self.exit(Outcome("quit", None, self.copied))

    def _refilter(self) -> None:
        self.refresh_status()
        self.search_now()

    def action_choose_agent(self) -> None:
        options = [("", "every agent")]
        options += [(a, a.replace("_", "-")) for a in self.filters.agents if a is not None]
        current = self.filters.agents[self.filters.agent] or ""
        self.push_screen(Choices("agent", options, current), self._agent_chosen)

    def _agent_chosen(self, chosen: str | None) -> None:
        if chosen is None:
            return
        self.filters.agent = self.filters.agents.index(chosen or None)
        self._refilter()

    def action_choose_project(self) -> None:
        here = os.path.realpath(self.cwd)
        options = [("", "any project"), (here, f"this directory's: {view.short(here, self.home)}")]
        for row in self.rows().values():
            if row.project and row.project not in {key for key, _ in options}:
                options.append((row.project, view.short(row.project, self.home)))
        current = self.filters.project or ""
        self.push_screen(Choices("project", options, current), self._project_chosen)

    def _project_chosen(self, chosen: str | None) -> None:
        if chosen is None:
            return
        self.filters.project = chosen or None
        self._refilter()

    def action_cycle_sort(self) -> None:
        self.filters.sort = (self.filters.sort + 1) % len(SORTS)
        self._refilter()

    def action_cycle_kinds(self) -> None:
        self.filters.kinds = (self.filters.kinds + 1) % len(KIND_SETS)
        self._refilter()

    def on_unmount(self) -> None:
        for sig, handler in self._signals.items():
            signal.signal(sig, handler)
        self._ui_loop = None
        self._pool.shutdown(wait=False, cancel_futures=True)
