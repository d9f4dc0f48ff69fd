"""The picker's filters and the search they ask for, without Textual.

Kept apart from the app so that ``convodex pick`` can run the first search on the
picker's search thread, and draw its answer (``first_frame``), before Textual is
imported (SPEC L16: first results within 300 ms of launch).
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from msgspec import UnsetType

from convodex.catalog.plan import SearchRequest
from convodex.errors import ConvodexError

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService
    from convodex.models import AroundResult, Hit, RecentSession, SearchPage

PAGE = 50
PREVIEW_CONTEXT = 3  # messages either side of a hit in the preview
OPENING = 2 * PREVIEW_CONTEXT  # a recent session's messages after its first, previewed
SORTS = ("relevance", "newest", "oldest")
KIND_SETS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("default kinds", None),
    ("every kind", ("user_text", "assistant_text", "tool_input", "tool_output", "tool_error")),
    ("user text", ("user_text",)),
    ("tools", ("tool_input", "tool_output", "tool_error")),
)


@dataclass
class Filters:
    """What the filter keys cycle through; ``agents`` fills in once the catalog says."""

    agents: list[str | None] = field(default_factory=lambda: [None])
    agent: int = 0
    project: str | None = None  # a workspace path (this directory's with --here)
    sort: int = 0
    kinds: int = 0
    wanted_agent: str | None = None

    @classmethod
    def start(cls, agent: str | None, here: bool, sort: str, cwd: str = "") -> Filters:
        project = (cwd or os.getcwd()) if here else None
        chosen = cls(project=project, sort=SORTS.index(sort) if sort in SORTS else 0)
        if agent is not None:
            chosen.agents, chosen.agent, chosen.wanted_agent = [None, agent], 1, agent
        return chosen

    def set_agents(self, found: list[str]) -> None:
        current = self.agents[self.agent]
        self.agents = [None, *found]
        self.agent = self.agents.index(current) if current in self.agents else 0

    def request(self, query: str, cwd: str, limit: int = PAGE) -> SearchRequest:
        agent = self.agents[self.agent]
        return SearchRequest(
            query=query,
            kinds=KIND_SETS[self.kinds][1],
            limit=limit,
            sort=SORTS[self.sort],
            agents=() if agent is None else (agent,),
            projects=(self.project,) if self.project else (),
            group=False,  # the picker lists every matching moment
        )

    def describe(self) -> str:
        agent = self.agents[self.agent]
        project = os.path.basename(self.project.rstrip("/")) or "/" if self.project else "any"
        return " · ".join(
            [
                f"agent: {'all' if agent is None else agent.replace('_', '-')}",
                f"project: {project}",
                f"sort: {SORTS[self.sort]}",
                KIND_SETS[self.kinds][0],
            ]
        )


def search_thread() -> ThreadPoolExecutor:
    """The one thread every picker search and read runs on (it owns the connection
    until background indexing starts)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="convodex-pick")


def first_page(rows: int) -> int:
    """The first search's page on a terminal of ``rows`` rows: about a screenful (a hit
    takes a line or more, mostly two), so that fewer hits are read from their sources
    before the first results show. The app reads the whole page right after."""
    return min(PAGE, max(10, rows // 2))


@dataclass
class FirstLook:
    """The first search's answer (or its error) and the first hit's context: what the
    first frame shows, and what the picker shows at once when it starts."""

    page: SearchPage | ConvodexError
    preview: AroundResult | None = None


def first_look(service: HistoryService, request: SearchRequest) -> FirstLook:
    """Search (or list the recent sessions, for a query of no words), then read the
    first row's preview; errors are answers, not exceptions."""
    try:
        page = service.search(request)
    except ConvodexError as exc:
        return FirstLook(exc)
    sessions = [] if isinstance(page.sessions, UnsetType) else page.sessions
    rows: list[Hit] | list[RecentSession] = page.hits or sessions
    if not rows:
        return FirstLook(page)
    try:
        found = preview_of(service, rows[0])
    except ConvodexError:
        found = None  # the preview shows the snippet instead
    return FirstLook(page, found)


def preview_of(service: HistoryService, row: Hit | RecentSession) -> AroundResult:
    """What the preview shows of a row: a hit in its context, a recent session's
    opening messages."""
    from convodex.models import Hit

    if isinstance(row, Hit):
        at, before, after = row.message_index, PREVIEW_CONTEXT, PREVIEW_CONTEXT
    else:
        at, before, after = row.opening_index, 0, OPENING
    return service.around(
        at, session_id=row.session_id, path=row.session_path, before=before, after=after
    )


def outcome(future: Future[Any]) -> Any:
    """A finished future's result, or the error to show in its place."""
    try:
        return future.result()
    except ConvodexError as exc:
        return exc
    except Exception:
        return ConvodexError("the search failed")


def settled(future: Future[FirstLook]) -> FirstLook:
    """A finished first search's answer; an unexpected failure is an error to show."""
    answer = outcome(future)
    return answer if isinstance(answer, FirstLook) else FirstLook(answer)
