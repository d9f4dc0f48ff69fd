"""What the picker shows, as plain text and styled spans, without Textual or Rich.

The Textual app and the first frame drawn before Textual has loaded (``first_frame``)
both show these, so the screen the person sees does not change when Textual takes
over. A style is a Rich style name the first frame also knows (``STYLES`` there).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from msgspec import UnsetType

from convodex.models import (
    AroundResult,
    Hit,
    Progress,
    RecentSession,
    SearchPage,
    SimilarPage,
    SimilarSession,
)
from convodex.text.matches import highlights
from convodex.text.query import Query
from convodex.text.snippet import collapse_whitespace
from convodex.tui.state import Filters

Span = tuple[str, str]  # (text, style); "" is the default style
RESULTS_PERCENT = 55  # of the width; the preview has the rest
MATCH = "bold yellow"
ACTIONS = "enter resume · tab actions · ^s show · ^x export · ^y copy"


def marked(text: str, query: Query | None) -> list[Span]:
    """``text`` with the words ``query`` matches in the match style."""
    spans: list[Span] = []
    at = 0
    for start, end in highlights(query, text) if query is not None else []:
        if start > at:
            spans.append((text[at:start], ""))
        spans.append((text[start:end], MATCH))
        at = end
    if at < len(text):
        spans.append((text[at:], ""))
    return spans


def short(path: str, home: str) -> str:
    """A path with ``~`` for the home directory."""
    if home and path.startswith(home.rstrip("/") + "/"):
        return "~" + path[len(home.rstrip("/")) :]
    return path


# A row of the list: a hit (a search), or a session (no words: the recent sessions).
Row = Hit | RecentSession


def hit_ref(row: Row) -> str:
    """What the actions list is about: the row's ref and its session's title."""
    return f"{row.ref} · {row.session_title or row.session_id}"


def session_header(row: Row, home: str) -> str:
    """A result group's heading, and a recent session's row: title · agent · project
    (``~`` for home) · date."""
    project = short(row.project or "", home)
    when = ""
    if row.last_activity_at is not None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.last_activity_at / 1000))
    pieces = [row.session_title or row.session_id, row.agent.replace("_", "-"), project, when]
    return " · ".join(p for p in pieces if p)


def listed(page: SearchPage) -> list[RecentSession]:
    """The sessions a query of no words lists (newest first); none for a search."""
    return [] if isinstance(page.sessions, UnsetType) else page.sessions


def similar_page(found: SimilarPage, progress: Progress) -> SearchPage:
    """The sessions like one, as a page of listed sessions (of the catalog's revision:
    the picker refreshes a page only when the index has grown since)."""
    return SearchPage(
        hits=[],
        next_cursor=None,
        revision=progress.revision,
        stale_cursor=False,
        subagent_hits=False,
        progress=progress,
        sessions=list(found.sessions),
        mode=found.mode,
    )


def grouped(hits: list[Hit]) -> list[list[Hit]]:
    """Hits per session, in the order their sessions first appear."""
    groups: dict[tuple[str, str], list[Hit]] = {}
    for hit in hits:
        groups.setdefault((hit.session_id, hit.session_path), []).append(hit)
    return list(groups.values())


def hit_line(hit: Hit, query: Query | None) -> list[Span]:
    """One result: where it is (message number, kind, tool) and its snippet."""
    label = hit.kind if hit.tool_name is None else f"{hit.kind} {hit.tool_name}"
    return [(f"  #{hit.message_index} {label}: ", "dim"), *marked(hit.snippet, query)]


def preview(row: Row, found: AroundResult | None, query: Query | None, home: str) -> list[Span]:
    """The preview pane: the session, the row's ref and resume command, then the hit in
    its context (its message marked), or its snippet until the context is read; a
    recent session's opening messages."""
    return [span for block in preview_blocks(row, found, home) for span in block(query)]


def preview_blocks(
    row: Row, found: AroundResult | None, home: str
) -> list[Callable[[Query | None], list[Span]]]:
    """The preview in blocks of whole lines (the heading, then each message), each
    marked for a query when asked: the first frame marks only the blocks on screen.
    A hit shows in its context (its snippet until that is read); a recent session
    shows its opening messages."""
    heading: list[Span] = [(session_header(row, home) + "\n", "bold"), (f"{row.ref}\n", "dim")]
    if row.resume_command:
        heading.append((f"{row.resume_command}\n", "dim"))
    blocks: list[Callable[[Query | None], list[Span]]] = [partial(unmarked, heading)]
    if found is None:
        return (
            blocks
            if isinstance(row, RecentSession)
            else [*blocks, partial(_text, "\n", row.snippet)]
        )
    for message in found.messages:
        role = f"#{message.message_index} {message.role}"
        style = "bold reverse" if message.hit and isinstance(row, Hit) else "bold"
        blocks.append(partial(_message, (f"\n{role}", style), collapse_whitespace(message.text)))
    return blocks


def unmarked(spans: list[Span], query: Query | None) -> list[Span]:
    """A block with nothing to mark."""
    return spans


def _text(before: str, text: str, query: Query | None) -> list[Span]:
    return [(before, ""), *marked(text, query)]


def _message(role: Span, text: str, query: Query | None) -> list[Span]:
    return [role, ("\n", ""), *marked(text, query), ("\n", "")]


def page_summary(page: SearchPage) -> str:
    """``50+ hits in 12 sessions`` (``1 hit in 1 session``): the status line's first
    words once results are in; ``12 recent sessions`` for a query of no words."""
    if not page.hits and not isinstance(page.sessions, UnsetType):
        more = "+" if page.next_cursor else ""
        count = len(page.sessions)
        if page.sessions and isinstance(page.sessions[0], SimilarSession):
            return f"{count} session{'' if count == 1 else 's'} like it ({page.mode})"
        return f"{count}{more} recent session{'' if count == 1 else 's'}"
    sessions = len({(h.session_id, h.session_path) for h in page.hits})
    more = "+" if page.next_cursor else ""
    hits = f"{len(page.hits)}{more} hit{'' if len(page.hits) == 1 and not more else 's'}"
    return f"{hits} in {sessions} session{'' if sessions == 1 else 's'}"


# The status line's word for a catalog an older version indexed the demo into, beside
# the user's own sessions (``catalog.demo``'s ``mixed``).
MIXED_LABEL = "demo mixed in (convodex index drops it)"


def status(error: str | None, found: str, progress: Progress | None, filters: Filters) -> str:
    """The status line: "demo" for the bundled demo's answers (or that it is mixed in),
    the results or the error, how far the index is, the filters."""
    demo = progress.demo if progress is not None else None
    pieces = ["demo"] if demo == "only" else [MIXED_LABEL] if demo == "mixed" else []
    if error:
        pieces.append(f"error: {error}")
    elif found:
        pieces.append(found)
    if progress is not None and progress.state == "indexing":
        pieces.append(f"indexing {progress.indexed}/{progress.total}")
    elif progress is not None and progress.state == "empty":
        pieces.append("index empty: first scan running")
    elif progress is not None and progress.state == "degraded":
        pieces.append("read-only catalog")
    pieces.append(filters.describe())
    pieces.append(ACTIONS)
    return " · ".join(pieces)
