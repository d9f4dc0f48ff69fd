"""Hydration (SPEC L4, L14): a chosen candidate becomes a hit people can read.

Only after SQLite has chosen the final candidates is each one's message read from
its authoritative file (by stored byte offset) to build the snippet and context. A
candidate whose source no longer says what was indexed is dropped and its source
queued for reindexing. The session facts a hit carries (agent, project, times, the
title's source) come from the catalog; the title's words come from the source.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from convodex import config
from convodex.catalog import spans
from convodex.catalog.db import Catalog
from convodex.catalog.rowids import ADDRESSES, kind_of, part_of, unit_base
from convodex.catalog.speed.wing import Wing
from convodex.errors import NotFound, QueryError
from convodex.models import ContextMessage, Hit, Moment
from convodex.sqlite import bound_runs, marks, sqlite3
from convodex.text.agents import agent_label
from convodex.text.matches import first_match, highlights, snippet_spans
from convodex.text.query import Query
from convodex.text.snippet import head, window
from convodex.text.titles import first_message_title, own_title

if TYPE_CHECKING:
    from convodex.sources.base import SourceMessage

SNIPPET_RADIUS = 80
CONTEXT_CHARS = 400


class RuntimeState(msgspec.Struct, frozen=True):
    """Which sessions are open, running or current in this process: never persisted."""

    open: frozenset[str] = frozenset()
    running: frozenset[str] = frozenset()
    current: str | None = None


# A source's path as a Path, made once a process: a page of hits from 180 sessions
# parsed 180 paths a search (Paths are immutable, so sharing them is safe).
_as_path = functools.lru_cache(maxsize=8192)(Path)


class SourceRow(msgspec.Struct):
    """A source's catalog facts, and what this search learned about its file."""

    id: int
    path: str
    format: str
    session_id: str
    last_activity_at: int | None
    workspace: str | None
    title_index: int | None
    byte_offset: int
    size: int | None
    mtime_ns: int | None
    inode: int | None
    title_offset: int | None
    title_length: int | None
    changed: bool = False
    bad: bool = False
    # The file's (size, mtime) as this search found it (``_checked``).
    seen: tuple[int, int] | None = None
    titles: dict[str | None, str | None] = msgspec.field(default_factory=dict)
    # The last activity of each session inside the file (a file of many: Aider runs).
    activity: dict[str, int | None] = msgspec.field(default_factory=dict)
    messages: dict[int, SourceMessage | None] = msgspec.field(default_factory=dict)

    @property
    def file(self) -> Path:
        """The file every message of the source is read from (one ``Path`` a process)."""
        return _as_path(self.path)


_SOURCE_COLUMNS = (
    "id, path, format, session_id, last_activity_at, workspace, title_index, byte_offset, "
    "size, mtime_ns, inode, title_offset, title_length"
)


class Hydrator:
    """Builds hits for one search from its sources; caches per search what it reads."""

    def __init__(self, catalog: Catalog, runtime: RuntimeState, speed: Wing | None = None) -> None:
        self.catalog = catalog
        self.runtime = runtime
        self.speed = speed or Wing()
        self.sources: dict[int, SourceRow | None] = {}
        self._resume_templates: Mapping[str, str | None] | None = None
        self._resume_commands: dict[tuple[str, str, str | None], str | None] = {}
        # Where each prefetched unit is: (source, message, first part, time, timed).
        self._places: dict[int, tuple[Any, ...]] = {}
        # Each prefetched message's record: (source, message) -> (offset, length).
        self._spans: dict[tuple[int, int], tuple[int, int]] = {}
        # Candidates chosen by meaning, not by a word (hybrid search, L19): shown by
        # their part's opening when no word of the query is in it.
        self.by_meaning: set[int] = set()

    def resume_command(self, agent: str, session_id: str, workspace: str | None) -> str | None:
        """The hit's copyable resume command (L15); templates read once per search.

        A broken config file never breaks a search: hits fall back to the agents' own
        commands (``convodex resume`` reports the file's error).
        """
        from convodex.catalog.commands import shown_resume_command, usable_templates

        if self._resume_templates is None:
            self._resume_templates = usable_templates()
        key = (agent, session_id, workspace)
        if key not in self._resume_commands:  # a session's hits share one command
            self._resume_commands[key] = shown_resume_command(
                agent, session_id, workspace, self._resume_templates
            )
        return self._resume_commands[key]

    def prefetch(self, addresses: Sequence[int]) -> None:
        """Where a page's candidates are, their sources and their records' spans, in
        three queries instead of three per candidate."""
        bases = sorted({unit_base(address) for address in addresses} - self._places.keys())
        placed: list[tuple[int, int]] = []
        for chunk in bound_runs(bases):
            for base, *place in self.catalog.db.execute(
                "SELECT m.base, s.source_id, m.message, m.first_part, m.at, m.timed "
                f"FROM messages AS m JOIN slots AS s ON s.slot = {ADDRESSES.slot_sql('m.base')} "
                f"WHERE m.base IN ({marks(chunk)})",
                chunk,
            ):
                self._places[base] = tuple(place)
                placed.append((place[0], place[1]))
        self._spans.update(spans.lookup_many(self.catalog.db, placed))
        self._read_sources({p[0] for p in self._places.values() if p[0] not in self.sources})

    def _place(self, address: int) -> tuple[Any, ...] | None:
        """(source, message, first part, time, timed) of a document's unit, or None
        once it is gone."""
        base = unit_base(address)
        if base not in self._places:
            self.prefetch([address])
        return self._places.get(base)

    def source(self, source_id: int) -> SourceRow | None:
        if source_id not in self.sources:
            self._read_sources({source_id})
        return self.sources[source_id]

    def _read_sources(self, ids: set[int]) -> None:
        """These sources' catalog rows, checked against their files (None: gone)."""
        for chunk in bound_runs(sorted(ids)):
            for source_id in chunk:
                self.sources[source_id] = None
            for row in self.catalog.db.execute(
                f"SELECT {_SOURCE_COLUMNS} FROM sources WHERE id IN ({marks(chunk)})",
                chunk,
            ):
                self.sources[row[0]] = self._checked(SourceRow(*row))

    def _checked(self, src: SourceRow) -> SourceRow:
        """The source, marked bad or changed by what its file says now."""
        from convodex.sources.registry import source_stat

        try:
            st = source_stat(src.format, src.file)
        except OSError:
            src.bad = True
        else:
            src.seen = (st.size, st.mtime_ns)
            if st.inode != src.inode or st.size < src.byte_offset:
                src.bad = True
            elif src.seen != (src.size, src.mtime_ns):
                src.changed = True  # appended since indexing: rows still valid, queue it
        return src

    def load(self, src: SourceRow, index: int) -> SourceMessage | None:
        """One message read from its authoritative file by its stored span."""
        if index not in src.messages:
            span = self._spans.get((src.id, index)) or spans.lookup(self.catalog.db, src.id, index)
            src.messages[index] = None if span is None else self._read(src, index, *span)
        return src.messages[index]

    def _read(self, src: SourceRow, index: int, offset: int, length: int) -> SourceMessage | None:
        from convodex.sources.registry import FORMATS

        try:
            return FORMATS[src.format].load(src.file, offset, length, index)
        except OSError:
            return None

    def hit(self, rowid: int, score: float, query: Query, around: int) -> Hit | None:
        """The hit for one candidate, or None when its source changed underneath."""
        place = self._place(rowid)
        if place is None:
            return None  # removed since the candidates were chosen
        source_id, index, first_part, at, timed = place
        part, kind = part_of(rowid, first_part), kind_of(rowid)
        src = self.source(source_id)
        if src is None or src.bad:
            return None
        message = self.load(src, index)
        doc = (
            None
            if message is None
            else next((d for d in message.documents if (d.part, d.kind) == (part, kind)), None)
        )
        span = None if doc is None else first_match(query, doc.text, kind != "tool_output")
        if message is None or doc is None or (span is None and rowid not in self.by_meaning):
            src.bad = True  # the bytes no longer say what was indexed
            return None
        # A file of many conversations (chat export) names each message's own.
        session_id = message.session_id or src.session_id
        if span is None:  # chosen by meaning: the part's opening
            shown = head(doc.text, 2 * SNIPPET_RADIUS)
        else:
            shown = snippet(query, doc.text, span)
        hit = Hit(
            session_id=session_id,
            session_path=src.path,
            source_format=src.format,
            agent=agent_label(src.format),
            message_index=index,
            part_index=part,
            kind=doc.kind,
            role=message.role,
            tool_name=doc.tool_name,
            snippet=shown,
            score=round(-score, 6),
            session_title=self.title(src, message) or session_id,
            workspace_root=src.workspace,
            project=src.workspace,
            message_at=int(at) if timed else None,
            last_activity_at=self.last_activity(src, session_id),
            ref=f"{session_id}#{index}",
            open=session_id in self.runtime.open,
            running=session_id in self.runtime.running,
            current=session_id == self.runtime.current,
            resume_command=self.resume_command(src.format, session_id, src.workspace),
            highlights=highlights(query, shown),
        )
        if around:
            hit.around = self.around(src, index, around, around, query)
        return hit

    def moment(self, rowid: int, score: float, query: Query) -> Moment | None:
        """A grouped hit's other match (L19), or None when its source changed."""
        hit = self.hit(rowid, score, query, 0)
        if hit is None:
            return None
        return Moment(
            ref=hit.ref,
            message_index=hit.message_index,
            part_index=hit.part_index,
            kind=hit.kind,
            role=hit.role,
            tool_name=hit.tool_name,
            snippet=hit.snippet,
            score=hit.score,
            message_at=hit.message_at,
        )

    def last_activity(self, src: SourceRow, session_id: str) -> int | None:
        """The session's last activity: the file's for its own session, else that of the
        messages naming it (an Aider run's, not the whole history's; as ``recent`` and
        the tree date it), read once a search."""
        if session_id == src.session_id:
            return src.last_activity_at
        if session_id not in src.activity:
            row = self.catalog.db.execute(
                "SELECT coalesce(max(CASE WHEN timed THEN at END), max(at)) FROM messages "
                "WHERE session_key = ?",
                (session_id,),
            ).fetchone()
            src.activity[session_id] = src.last_activity_at if row[0] is None else int(row[0])
        return src.activity[session_id]

    def title(self, src: SourceRow, message: SourceMessage) -> str | None:
        """The format's own title, else the first user message, else None (L14)."""
        if message.session_id:  # a conversation inside a file of many
            return own_title(message.title)
        return self.session_title(src)

    def session_title(self, src: SourceRow) -> str | None:
        """The title of the source's own session (read once a search)."""
        if None not in src.titles:
            src.titles[None] = self._title(src)
        return src.titles[None]

    def _title(self, src: SourceRow) -> str | None:
        """Kept for the file as this search found it: a file changed since it was last
        read (a rename appended, say) has its title read again, once."""
        return self.speed.title(src.path, src.seen, lambda: self._read_title(src))

    def _read_title(self, src: SourceRow) -> str | None:
        if src.size is not None and src.mtime_ns is not None:
            title = own_title(self._own_title(src))
            if title:
                return title
        if src.title_index is None:
            return None
        return title_from(self.load(src, src.title_index))

    def _own_title(self, src: SourceRow) -> str | None:
        """The format's title: from the record the catalog places it in while the file
        is as indexed (none there: none at all), else from the reader's ``info``."""
        from convodex.sources.registry import FORMATS

        fmt = FORMATS[src.format]
        try:
            if src.title_offset is not None and not src.changed:
                if src.title_offset < 0:
                    return None
                title = fmt.title_at(src.file, src.title_offset, src.title_length or 0)
                if title:
                    return title
                # The record no longer gives one: the file is not as indexed.
            return fmt.info(src.file).title
        except (OSError, ValueError, RecursionError):
            return None

    def around(
        self, src: SourceRow, index: int, before: int, after: int, query: Query | None = None
    ) -> list[ContextMessage]:
        """The messages around ``index``; with ``query``, each with where it matches."""
        out = []
        for i, offset, length in spans.lookup_range(
            self.catalog.db, src.id, index - before, index + after
        ):
            if i not in src.messages:
                src.messages[i] = self._read(src, i, offset, length)
            message = src.messages[i]
            if message is None:
                continue
            text = head(message.text(), CONTEXT_CHARS)
            context = ContextMessage(message_index=i, role=message.role, text=text, hit=i == index)
            if query is not None:
                context.highlights = highlights(query, text)
            out.append(context)
        return out

    def queue_changed(self) -> None:
        """Sources that changed since indexing go back in the queue (never when degraded)."""
        changed = [s.id for s in self.sources.values() if s is not None and (s.bad or s.changed)]
        if not changed or not self.catalog.writable:
            return
        try:
            # A search never waits for a writer: busy, the next scan notices it.
            with self.catalog.without_waiting(), self.catalog.transaction() as db:
                db.executemany(
                    "UPDATE sources SET pending = 1, health = CASE WHEN health = 'ok' "
                    "THEN 'stale' ELSE health END WHERE id = ?",
                    [(i,) for i in changed],
                )
        except sqlite3.OperationalError:
            pass  # busy: the next scan notices the change anyway


def snippet(query: Query, text: str, first: tuple[int, int]) -> str:
    """The hit's snippet: one window around the stretch holding the query's terms, or
    a shorter window around each of a few stretches when they lie far apart."""
    pieces = snippet_spans(query, text, first, SNIPPET_RADIUS)
    radius = SNIPPET_RADIUS // len(pieces)
    return " ".join(window(text, start, end, radius) for start, end in pieces)


def title_from(first_user: SourceMessage | None) -> str | None:
    """A session's fallback title: its first message with user text (``text.titles``)."""
    return None if first_user is None else first_message_title(first_user.documents)


def first_user_title(catalog: Catalog, source_id: int) -> str | None:
    """The fallback title of a source's session, read from its source by stored span."""
    row = catalog.db.execute(
        f"SELECT {_SOURCE_COLUMNS} FROM sources WHERE id = ?", (source_id,)
    ).fetchone()
    if row is None or row[6] is None:
        return None
    src = SourceRow(*row)
    return title_from(Hydrator(catalog, RuntimeState()).load(src, src.title_index or 0))


def around_path(
    catalog: Catalog,
    session_path: str,
    message_index: int,
    before: int = 3,
    after: int = 3,
    query: Query | None = None,
) -> list[ContextMessage]:
    """The messages around one message of a session, read from its source; with
    ``query``, each with where it matches."""
    if not (0 <= before <= config.MAX_AROUND and 0 <= after <= config.MAX_AROUND):
        raise QueryError(f"before and after must be between 0 and {config.MAX_AROUND}")
    row = catalog.db.execute("SELECT id FROM sources WHERE path = ?", (session_path,)).fetchone()
    if row is None:
        raise NotFound("unknown session")
    hydrator = Hydrator(catalog, RuntimeState())
    src = hydrator.source(int(row[0]))
    if src is None or src.bad:
        return []
    return hydrator.around(src, message_index, before, after, query)
