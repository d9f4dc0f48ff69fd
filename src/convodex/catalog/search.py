"""Search (SPEC L4, L13): candidates from FTS5 in the asked order, then hydration.

SQLite chooses the final candidates from tokens and metadata alone, every filter
inside SQL; only then is each chosen message read from its source (``hits.py``).
Each order has an exact keyset cursor, so every matching document is reachable by
paging: relevance (BM25, ties by rowid: within a source its message and part order,
see ``rowids``), newest and oldest (message time, ties by rowid).
"""

from __future__ import annotations

import base64
import bisect
import heapq
from collections import Counter
from collections.abc import Iterable
from typing import Any

import msgspec

from convodex import config
from convodex.catalog import hybrid
from convodex.catalog.db import Catalog
from convodex.catalog.hits import Hydrator, RuntimeState, around_path
from convodex.catalog.plan import Plan, SearchRequest, make_plan
from convodex.catalog.progress import progress, progress_sentence, root_ids_for
from convodex.catalog.ranked import Reorder, SessionKey, Stream, session_counts, sessions_of
from convodex.catalog.rowids import TABLES, Candidate
from convodex.catalog.speed.wing import Wing
from convodex.errors import QueryError
from convodex.models import ContextMessage, Hit, SearchPage
from convodex.sqlite import sqlite3
from convodex.text.query import Query

__all__ = [
    "RuntimeState",
    "SearchRequest",
    "Searcher",
    "progress",
    "progress_sentence",
    "root_ids_for",
]

MAX_BATCHES = 20
# Candidates whose sessions a grouped page looks up at once.
GROUP_BATCH = 64
# A grouped hit's other best moments: its session's next candidates in the stream,
# before the page's end (L19).
MOMENTS = 2
CURSOR_VERSION = 2


def _candidates(rows: Iterable[tuple[Any, int, Any]], table: str) -> list[Candidate]:
    """SQL rows (order key, the table's rowid, score) as candidates (rowid: address)."""
    return TABLES[table].ranked(rows)


def encode_cursor(revision: int, key: str, after: tuple[float, int]) -> str:
    raw = msgspec.json.encode([CURSOR_VERSION, revision, key, after[0], after[1]])
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, str, tuple[float, int]]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        version, revision, key, order, rowid = msgspec.json.decode(
            base64.urlsafe_b64decode(padded.encode("ascii"))
        )
        if version != CURSOR_VERSION:
            raise ValueError("cursor version")
        return int(revision), str(key), (float(order), int(rowid))
    except (ValueError, TypeError, msgspec.DecodeError, UnicodeError) as exc:
        raise QueryError("invalid cursor") from exc


class Searcher:
    """Runs searches against one catalog connection, with the accelerators of ``speed``
    (none unless given: the core alone answers the same)."""

    def __init__(
        self,
        catalog: Catalog,
        runtime: RuntimeState | None = None,
        speed: Wing | None = None,
        reorder: Reorder | None = None,
    ) -> None:
        self.catalog = catalog
        self.runtime = runtime or RuntimeState()
        self.speed = speed or Wing()
        # Where another ranking reorders a grouped search's first candidates (hybrid
        # search fuses its own in): see ``ranked.Reorder``. None: the lexical order.
        self.reorder = reorder

    def search(self, request: SearchRequest) -> SearchPage:
        plan = make_plan(self.catalog, request)
        fusion, note = hybrid.prepare(self.catalog, request.mode, plan.group)
        if fusion is not None:  # another order: a lexical page's cursor does not hold
            plan = msgspec.structs.replace(plan, key=f"{plan.key}|hybrid")
        limit = config.search_limit(request.limit)
        if request.around < 0 or request.around > config.MAX_AROUND:
            raise QueryError(f"around must be between 0 and {config.MAX_AROUND}")
        root_ids = root_ids_for(self.catalog, request.roots)
        revision = self.catalog.revision()
        after: tuple[float, int] | None = None
        if request.cursor:
            cur_revision, key, after = decode_cursor(request.cursor)
            if key != plan.key:
                raise QueryError("cursor belongs to a different query (its words, filters or sort)")
            if cur_revision != revision:
                return self._page([], None, revision, True, root_ids, False)
        elif request.page is not None and not plan.group:
            after = self._page_start(plan, request.page, limit)
        elif request.page is not None and request.page < 1:
            raise QueryError("page must be 1 or more")
        hydrator = Hydrator(self.catalog, self.runtime, self.speed)
        relaxed = False
        reorder = self.reorder
        if fusion is not None:

            def reorder(plan: Plan, head: list[Candidate]) -> list[Candidate]:
                fused = fusion.reorder(plan, head)
                hydrator.by_meaning = fusion.semantic_only
                return fused

        try:
            if plan.group:
                stream = Stream(plan, self._fetch, reorder)
                if request.page is not None and not request.cursor:
                    after = self._group_start(stream, (request.page - 1) * limit)
                hits, last, more = self._collect_grouped(
                    stream, hydrator, limit, after, request.around
                )
                relaxed = stream.relaxed is not None
            else:
                hits, last, more = self._collect(plan, hydrator, limit, after, request.around)
        finally:
            hydrator.queue_changed()
        next_cursor = encode_cursor(revision, plan.key, last) if more and last else None
        subagents = not plan.include_subagents and self._subagents_match(plan)
        page = self._page(hits, next_cursor, revision, False, root_ids, subagents)
        page.grouped = plan.group
        page.relaxed = relaxed
        page.mode = "lexical" if fusion is None else "hybrid"
        page.mode_note = note
        return page

    def _page_start(self, plan: Plan, number: int, limit: int) -> tuple[float, int] | None:
        """Where page ``number`` starts: after the candidates of the pages before it
        (counted as candidates, so a page needs no cursor copied from the last)."""
        if number < 1:
            raise QueryError("page must be 1 or more")
        if number == 1:
            return None
        before = self.candidates(plan, None, (number - 1) * limit)
        if len(before) < (number - 1) * limit:
            return (float("inf"), 2**63 - 1)  # past the last candidate: an empty page
        order, rowid, _ = before[-1]
        return (order, rowid)

    def _page(
        self,
        hits: list[Hit],
        next_cursor: str | None,
        revision: int,
        stale: bool,
        root_ids: list[int] | None,
        subagent_hits: bool,
    ) -> SearchPage:
        return SearchPage(
            hits=hits,
            next_cursor=next_cursor,
            revision=revision,
            stale_cursor=stale,
            subagent_hits=subagent_hits,
            progress=progress(self.catalog, root_ids, self.speed),
        )

    def _collect(
        self,
        plan: Plan,
        hydrator: Hydrator,
        limit: int,
        after: tuple[float, int] | None,
        around: int,
    ) -> tuple[list[Hit], tuple[float, int] | None, bool]:
        """Fill a page: candidates in order, hydrated; a dropped one is replaced."""
        hits: list[Hit] = []
        last = after
        for _ in range(MAX_BATCHES):
            want = limit - len(hits)
            batch = self.candidates(plan, last, want + 1)
            hydrator.prefetch([rowid for _, rowid, _ in batch[:want]])
            for order, rowid, score in batch:
                if len(hits) == limit:
                    return hits, last, True  # another candidate follows ``last``
                hit = hydrator.hit(rowid, score, plan.query, around)
                last = (order, rowid)
                if hit is not None:
                    hits.append(hit)
            if len(batch) <= want:
                return hits, last, False  # the candidates ran out
        return hits, last, True

    def _fetch(self, plan: Plan, count: int | None) -> list[Candidate]:
        """The plan's first ``count`` candidates (None: all of them, kept)."""
        if count is None:
            return self.candidates(plan, (float("-inf"), -1), 2**62)
        return self.candidates(plan, None, count)

    def _group_start(self, stream: Stream, sessions: int) -> tuple[float, int] | None:
        """Where a grouped page starts that follows ``sessions`` sessions (page N)."""
        if not sessions:
            return None
        seen: set[SessionKey] = set()
        batch: list[tuple[int, Candidate]] = []
        for at, candidate in stream.walk(0):
            batch.append((at, candidate))
            if len(batch) < GROUP_BATCH:
                continue
            found = sessions_of(self.catalog, [c[1] for _, c in batch])
            for place, (_, address, _) in batch:
                key = found.get(address)
                if key is not None and key not in seen:
                    if len(seen) == sessions:
                        return (float(place), -1)
                    seen.add(key)
            batch = []
        found = sessions_of(self.catalog, [c[1] for _, c in batch])
        for place, (_, address, _) in batch:
            key = found.get(address)
            if key is not None and key not in seen:
                if len(seen) == sessions:
                    return (float(place), -1)
                seen.add(key)
        return (float(2**62), -1)  # past the last session: an empty page

    def _collect_grouped(
        self,
        stream: Stream,
        hydrator: Hydrator,
        limit: int,
        after: tuple[float, int] | None,
        around: int,
    ) -> tuple[list[Hit], tuple[float, int] | None, bool]:
        """Fill a page with sessions: each session's first candidate in the stream
        that is not on an earlier page, hydrated, with its next ones before the page's
        end as its best moments; how many more it matches."""
        start = 0 if after is None else int(after[0])
        earlier = stream.before(start)
        seen = set(sessions_of(self.catalog, [c[1] for c in earlier]).values())
        shown: dict[SessionKey, Hit] = {}
        moments: dict[SessionKey, list[Candidate]] = {}
        last: tuple[float, int] | None = None
        batch: list[tuple[int, Candidate]] = []
        more = False

        def take(batch: list[tuple[int, Candidate]]) -> bool:
            """Hydrate the batch's new sessions; True once the page is full and another
            session follows."""
            nonlocal last
            found = sessions_of(self.catalog, [c[1] for _, c in batch])
            hydrator.prefetch([c[1] for _, c in batch if found.get(c[1]) not in seen])
            for place, candidate in batch:
                _, address, score = candidate
                key = found.get(address)
                if key is None:
                    continue
                if key in seen:
                    best = moments.get(key)
                    if best is not None and len(best) < MOMENTS:
                        best.append(candidate)
                    continue
                if len(shown) == limit:
                    return True
                hit = hydrator.hit(address, score, stream.query_plan.query, around)
                if hit is None:
                    continue  # changed underneath: a later hit may stand for its session
                seen.add(key)
                shown[key] = hit
                moments[key] = []
                last = (float(place + 1), -1)
            return False

        for at, candidate in stream.walk(start):
            batch.append((at, candidate))
            if len(batch) >= max(GROUP_BATCH, limit - len(shown) + 1):
                if take(batch):
                    more = True
                    break
                batch = []
        else:
            more = take(batch)
        hydrator.prefetch([c[1] for best in moments.values() for c in best])
        every = stream.every_match()
        if every is None:
            counts = session_counts(self.catalog, stream.query_plan, shown)
        else:  # every match is at hand: counted without asking FTS5 again
            counts = Counter(sessions_of(self.catalog, [c[1] for c in every]).values())
        for key, hit in shown.items():
            hit.more_hits = max(0, counts.get(key, 1) - 1)
            hit.moments = [
                moment
                for _, address, score in moments[key]
                if (moment := hydrator.moment(address, score, stream.query_plan.query))
            ]
        return list(shown.values()), last, more

    def candidates(
        self, plan: Plan, after: tuple[float, int] | None, count: int
    ) -> list[Candidate]:
        """The next ``count`` candidates after ``after`` in the plan's order, every filter
        inside SQL; the tables' own ordered answers merge here.

        A first page asks SQLite for just that page. A later page takes its slice of
        the complete ordered list, made once per catalog revision and kept.
        """
        runs = []
        for table in plan.tables():
            if after is None:
                runs.append(self._first_candidates(plan, table, count))
                continue
            ordered = self._ordered(plan, table)
            start = bisect.bisect_right(ordered, (after[0], after[1], float("inf")))
            runs.append(ordered[start : start + count])
        if len(runs) == 1:
            return runs[0]
        return list(heapq.merge(*runs))[:count]

    def _first_candidates(self, plan: Plan, table: str, count: int) -> list[Candidate]:
        """A first page's candidates: from the word's band when one answers it (a
        frequent word's page without ranking every match), else from FTS5."""
        if table == "documents":
            found = self.speed.first_page(self.catalog, plan, count)
            if found is not None:
                return _candidates(found, table)
        return self._table_candidates(plan, table, count)

    def _ordered(self, plan: Plan, table: str) -> list[Candidate]:
        """Every candidate of one table in the plan's order (kept for later pages)."""
        where = self.catalog.path or id(self.catalog.db)
        key = (where, self.catalog.revision(), plan.key, table)
        return self.speed.ordered(key, lambda: self._table_candidates(plan, table, None))

    def _table_candidates(self, plan: Plan, table: str, count: int | None) -> list[Candidate]:
        """The first ``count`` candidates of one table in order (None: all of them),
        on every core when the catalog's file can be read from several (``split``)."""

        def build(bounds: tuple[int, int] | None) -> tuple[str, list[Any]]:
            where = plan.where(table)
            if bounds is not None:
                where.add(f"{table}.rowid BETWEEN ? AND ?", *bounds)
            params: list[Any] = [plan.match(table), *where.params]
            if plan.sort == "relevance":
                # Tool output keeps no positions or counts worth ranking (detail=none):
                # its matches score 0 and follow in rowid order.
                rank = "rank" if table == "documents" else "0.0"
                sql = (
                    f"SELECT {rank} AS k, rowid, {rank} FROM {table} "
                    f"WHERE {table} MATCH ?{where.text()} ORDER BY k, rowid"
                )
            else:
                # Newest: minus the message time, so every order is ascending by key.
                sign = "-" if plan.sort == "newest" else ""
                sql = (
                    f"SELECT {sign}m.at AS k, c.rowid, 0.0 FROM "
                    f"(SELECT rowid FROM {table} WHERE {table} MATCH ?{where.text()}) AS c "
                    f"JOIN messages AS m ON m.base = {TABLES[table].base_sql('c.rowid')} "
                    "ORDER BY k, c.rowid"
                )
            if count is not None:
                sql += " LIMIT ?"
                params.append(count)
            return sql, params

        try:
            rows = self.speed.split(self.catalog, build, count, TABLES[table])
            if rows is not None:
                return _candidates(rows, table)
            sql, params = build(None)
            return _candidates(self.catalog.db.execute(sql, params), table)
        except sqlite3.OperationalError as exc:
            raise QueryError("query cannot be searched") from exc

    def _subagents_match(self, plan: Plan) -> bool:
        """Whether sub-agent sessions, left out, hold a match (``subagentHits``)."""
        for table in plan.tables():
            where = plan.where(table, subagents=True)
            row = self.catalog.db.execute(
                f"SELECT 1 FROM {table} WHERE {table} MATCH ?{where.text()} LIMIT 1",
                [plan.match(table), *where.params],
            ).fetchone()
            if row is not None:
                return True
        return False

    def around(
        self,
        session_path: str,
        message_index: int,
        before: int = 3,
        after: int = 3,
        query: Query | None = None,
    ) -> list[ContextMessage]:
        """The messages around one message of a session, read from its source."""
        return around_path(self.catalog, session_path, message_index, before, after, query)
