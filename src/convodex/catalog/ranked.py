"""A grouped search's order (SPEC L19): one stream of candidates, each session once.

A grouped page walks one deterministic stream of candidates: the first ``HEAD`` in the
plan's order (reordered by the ``reorder`` hook: where hybrid search fuses its own
ranking in), then the rest in the plan's order. When all the words together find too
little, the stream goes on with the relaxed query's candidates (any of the words), and
the answer says so. A page takes the first candidate of each session it has not shown
before; its cursor is a place in the stream, which is exact because a cursor only
holds for the catalog revision it was made at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import msgspec

from convodex.catalog.db import Catalog
from convodex.catalog.plan import Plan
from convodex.catalog.rowids import ADDRESSES, TABLES, Candidate, unit_base
from convodex.sqlite import bound_runs, marks
from convodex.text.query import relaxed

# A session as grouping sees it: its source, and its own id inside a file of many.
SessionKey = tuple[int, str | None]
# Candidates taken in the plan's order before the rest: what ``reorder`` may reorder.
HEAD = 200
# All the words finding fewer candidates than this: the relaxed query's follow.
RELAX_BELOW = 1

# Given the plan and the first ``HEAD`` lexical candidates in its order, the head in
# the order to show (None: the hook keeps the lexical order). A hook may add
# candidates (any document's address, with a score); the rest of the stream follows
# without them.
Reorder = Callable[[Plan, list[Candidate]], list[Candidate] | None]
# Candidates of one plan in its order: ``(plan, count)``, count None for all of them.
Fetch = Callable[[Plan, int | None], list[Candidate]]


class Stream:
    """The candidates of one grouped search in the order its pages walk."""

    def __init__(self, plan: Plan, fetch: Fetch, reorder: Reorder | None = None) -> None:
        self.plan = plan
        self.fetch = fetch
        self.reorder = reorder
        self.relaxed: Plan | None = None
        self._head: list[Candidate] | None = None
        self._lexical: list[Candidate] = []  # the head before ``reorder``
        self._rest: list[Candidate] | None = None
        self._whole = False  # whether the head holds every lexical candidate

    @property
    def query_plan(self) -> Plan:
        """The plan a hit is matched and counted by (the relaxed one when relaxed)."""
        return self.relaxed or self.plan

    def head(self) -> list[Candidate]:
        if self._head is None:
            found = self.fetch(self.plan, HEAD)
            self._whole = len(found) < HEAD
            if len(found) < RELAX_BELOW:
                loose = relaxed(self.plan.query)
                if loose is not None:
                    self.relaxed = msgspec.structs.replace(self.plan, query=loose)
                    more = self.fetch(self.relaxed, HEAD)
                    self._whole = len(more) < HEAD
                    seen = {c[1] for c in found}
                    found += [c for c in more if c[1] not in seen]
            self._lexical = found
            if self.reorder is not None:
                found = self.reorder(self.query_plan, found) or found
            self._head = found
        return self._head

    def every_match(self) -> list[Candidate] | None:
        """Every lexical candidate, when the head holds them all (None: it does not)."""
        self.head()
        return self._lexical if self._whole else None

    def rest(self) -> list[Candidate]:
        """Every candidate after the head, in the plans' order (made when a page needs it)."""
        if self._rest is None:
            seen = {c[1] for c in self.head()}
            rest: list[Candidate] = []
            for plan in (self.plan, self.relaxed):
                if plan is None:
                    continue
                for candidate in self.fetch(plan, None):
                    if candidate[1] not in seen:
                        seen.add(candidate[1])
                        rest.append(candidate)
            self._rest = rest
        return self._rest

    def walk(self, start: int) -> Iterable[tuple[int, Candidate]]:
        """(place, candidate) from place ``start`` on."""
        head = self.head()
        for at in range(start, len(head)):
            yield at, head[at]
        if self._whole:
            return
        rest = self.rest()
        for at in range(max(start, len(head)), len(head) + len(rest)):
            yield at, rest[at - len(head)]

    def before(self, start: int) -> list[Candidate]:
        """The candidates before place ``start``."""
        head = self.head()
        if start <= len(head) or self._whole:
            return head[:start]
        return head + self.rest()[: start - len(head)]


def sessions_of(catalog: Catalog, addresses: Sequence[int]) -> dict[int, SessionKey]:
    """The session of each candidate's document, from the catalog alone (a document
    removed since is left out)."""
    bases = sorted({unit_base(address) for address in addresses})
    by_base: dict[int, SessionKey] = {}
    for chunk in bound_runs(bases):
        for base, source_id, session_key in catalog.db.execute(
            "SELECT m.base, s.source_id, m.session_key "
            f"FROM messages AS m JOIN slots AS s ON s.slot = {ADDRESSES.slot_sql('m.base')} "
            f"WHERE m.base IN ({marks(chunk)})",
            chunk,
        ):
            by_base[base] = (int(source_id), session_key)
    return {a: by_base[unit_base(a)] for a in addresses if unit_base(a) in by_base}


def session_counts(
    catalog: Catalog, plan: Plan, sessions: Iterable[SessionKey]
) -> dict[SessionKey, int]:
    """How many documents of each session the plan matches, every filter applied: a
    statement per run of the session's slots and table (FTS5 seeks to a rowid range)."""
    counts: dict[SessionKey, int] = {}
    for session in sessions:
        source_id, session_key = session
        slots = [
            row[0]
            for row in catalog.db.execute(
                "SELECT slot FROM slots WHERE source_id = ?", (source_id,)
            )
        ]
        total = 0
        for table in plan.tables():
            layout = TABLES[table]
            match = plan.match(table)
            for low, high in layout.ranges(slots):
                where = plan.where(table)
                where.add(f"{table}.rowid BETWEEN ? AND ?", low, high)
                if session_key is not None:
                    where.add(
                        f"(SELECT session_key FROM messages WHERE base = "
                        f"{layout.base_sql(f'{table}.rowid')}) = ?",
                        session_key,
                    )
                total += catalog.db.execute(
                    f"SELECT count(*) FROM {table} WHERE {table} MATCH ?{where.text()}",
                    [match, *where.params],
                ).fetchone()[0]
        counts[session] = total
    return counts
