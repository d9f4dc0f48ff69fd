"""Hits as people read them in a terminal (SPEC L14): grouped per session, marked.

Each session gets one header line (title · agent · project · date), then its hits
with the matched words marked on a terminal (``--color``; ``NO_COLOR`` honoured),
home paths shortened to ``~``; the page ends with its counts and how to go on.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

import click

from convodex.catalog.progress import progress_sentence
from convodex.cli.plain import counted as counted
from convodex.models import Hit, Moment, Progress, Refresh, SearchPage
from convodex.text.agents import agent_label
from convodex.text.matches import highlights
from convodex.text.query import Query


def use_color(choice: str) -> bool:
    """``always``, ``never``, or ``auto``: on a terminal unless ``NO_COLOR`` is set."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def short_path(path: str | None) -> str:
    """``/home/me/app`` → ``~/app``."""
    if not path:
        return ""
    home = str(Path.home())
    if path == home:
        return "~"
    if path.startswith(home.rstrip("/") + "/"):
        return "~" + path[len(home.rstrip("/")) :]
    return path


def local_time(epoch_ms: int | None) -> str:
    if epoch_ms is None:
        return ""
    return datetime.fromtimestamp(epoch_ms / 1000).strftime("%Y-%m-%d %H:%M")


def describe_progress(state: Progress) -> str | None:
    """A line for stderr when the index is not complete, else None: the library's
    progress sentence with what to do about it; answers from the bundled demo say so
    first, always."""
    from convodex.catalog.demo import note

    said = _index_note(state)
    demo = note(state)
    if demo is not None:
        return demo if said is None else f"{demo}; {said}"
    return said


def _index_note(state: Progress) -> str | None:
    if state.state == "empty":
        return f"{progress_sentence(state)}; run `convodex index` (or search with --wait)"
    if state.state == "indexing":
        return f"{progress_sentence(state)} (use --wait)"
    if state.state == "degraded":
        return progress_sentence(state)
    return None


def describe_refresh(refresh: Refresh) -> str | None:
    """A line for stderr when a search's freshness check left sessions out, else None."""
    if refresh.missing <= 0 and refresh.complete:
        return None
    if refresh.missing <= 0:
        what = "recent sessions may be missing (the check ran out of time)"
    else:
        at_least = "" if refresh.complete else "at least "
        what = f"{at_least}{counted(refresh.missing, 'recent session')} may be missing"
    why = (
        f"the catalog could not be refreshed: {refresh.reason}"
        if refresh.reason
        else "changed since the last index, not brought in within the time budget"
    )
    return f"{what} ({why}): search with --wait, or run `convodex index`"


class HitPrinter:
    """Prints pages of hits for one query."""

    def __init__(self, color: bool, query: Query, number: int = 1) -> None:
        self.color = color
        self.query = query
        self.number = number  # the page's number: the next one is named at the end

    def echo(self, text: str = "", err: bool = False) -> None:
        # click strips styles when not on a terminal unless told to keep them.
        click.echo(text, err=err, color=self.color)

    def page(self, page: SearchPage) -> None:
        if page.stale_cursor:
            self.echo(
                "the catalog changed since that cursor: search again from the start", err=True
            )
        note = describe_progress(page.progress)
        if note:
            self.echo(note, err=True)
        if page.relaxed:
            self.echo("no message has all the words: these have some of them", err=True)
        if page.mode_note:
            self.echo(page.mode_note, err=True)
        elif page.mode == "hybrid":
            self.echo("hybrid search: words and meaning (--mode lexical for words only)", err=True)
        groups: dict[str, list[Hit]] = {}
        for hit in page.hits:
            groups.setdefault(f"{hit.session_id}\0{hit.session_path}", []).append(hit)
        for n, hits in enumerate(groups.values()):
            if n:
                self.echo()
            self.session(hits)
        self.echo(self.summary(page, len(groups), self.number))
        if page.subagent_hits:
            self.echo("sub-agent sessions match too: add --include-subagents to see them")

    def session(self, hits: list[Hit]) -> None:
        first = hits[0]
        title = first.session_title or first.session_id
        facts = [agent_label(first.agent), short_path(first.project)]
        facts.append(local_time(first.last_activity_at))
        header = " · ".join([title, *(f for f in facts if f)])
        self.echo(click.style(header, bold=True) if self.color else header)
        for hit in hits:
            self.line(hit)
            for ctx in hit.around or ():
                marker = ">" if ctx.hit else " "
                text = " ".join(ctx.text.split())[:160]
                self.echo(f"     {marker} #{ctx.message_index} {ctx.role}: {text}")
            # Grouped (L19): the session's next best moments, then how many more match.
            for moment in hit.moments or ():
                self.line(moment)
            rest = hit.more_hits - len(hit.moments or ())
            if rest > 0:
                more = f"  +{counted(rest, 'more hit')} in this session"
                self.echo(click.style(more, dim=True) if self.color else more)

    def line(self, hit: Hit | Moment) -> None:
        """One matching part: its message, kind and snippet."""
        label = hit.kind if hit.tool_name is None else f"{hit.kind} {hit.tool_name}"
        where = (
            click.style(f"#{hit.message_index}", dim=True)
            if self.color
            else (f"#{hit.message_index}")
        )
        self.echo(f"  {where} {label}: {self.mark(hit.snippet)}")

    def mark(self, snippet: str) -> str:
        """The snippet with the query's matched words in bold colour (on a terminal)."""
        if not self.color:
            return snippet
        out, at = [], 0
        for start, end in highlights(self.query, snippet):
            out.append(snippet[at:start])
            out.append(click.style(snippet[start:end], bold=True, fg="yellow"))
            at = end
        out.append(snippet[at:])
        return "".join(out)

    @staticmethod
    def summary(page: SearchPage, sessions: int, number: int = 1) -> str:
        if not page.hits:
            return "no hits"
        # Grouped: every hit of the page's sessions, not only those shown.
        found = len(page.hits) + sum(hit.more_hits for hit in page.hits)
        line = f"{counted(found, 'hit')} in {counted(sessions, 'session')}"
        if page.next_cursor:
            line += f" · more: --page {number + 1}"
        return line
