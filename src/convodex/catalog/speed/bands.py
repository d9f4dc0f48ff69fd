"""Impact bands: a frequent word's first page without ranking all its matches (L4).

FTS5 ranks by BM25, and for a one-word query a document's score depends only on how
often the word occurs in it (``tf``) and its length in tokens (``D``), given the
average length (``avgdl``): the word's idf is one factor common to every document.
Still, ranking ``the`` over 210 MB of sessions scores each of its 60,000 matches,
about 45 ms however few are shown. A *band* keeps, for one frequent word and the
default filters, every document that can be among the first ``DEPTH`` for any
average length within ``SPREAD`` of the one it was built at, with its ``tf`` and
``D``: about 200 to 250 documents. A first page of that word scores those here with
FTS5's own formula in the same floating-point steps, so it is FTS5's page, scores
bit for bit; the build compares every document's score with FTS5's and keeps no band
where one differs, and later pages come from FTS5 as before.

Why a band is enough: a document *beats* another at one average length when its
score is higher (equal: the lower rowid). The difference of two scores changes sign
at most once as the average length moves (it is linear in ``1 / avgdl``), so a
document that beats another at both ends of the range beats it everywhere between.
A band holds every document beaten at both ends by fewer than ``DEPTH`` others;
every other document is beaten at both ends by ``DEPTH`` members (``_band``), so it
is on no first page while the average stays in the range.

Kept current (``band_upkeep``): a band is stamped with the catalog revision and FTS5's
totals record it is exact for, and a search uses it only when both are the catalog's,
read in one snapshot. After a commit that adds a few documents, the indexer takes into each
current band the new documents it must hold and moves its stamp (``follow``); a
commit that deletes a member, a large one, or an average that drifted out of the
range leaves the band stale, and the indexer rebuilds it after its run
(``refresh``), with the list of frequent words.
"""

from __future__ import annotations

import bisect
import contextlib
import math
import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import msgspec

from convodex import config
from convodex.catalog.db import Catalog, read_revision
from convodex.catalog.plan import Plan, SearchRequest, Where, make_plan
from convodex.catalog.rowids import DOCUMENTS
from convodex.errors import QueryError
from convodex.sqlite import bound_runs, marks, sqlite3, transaction
from convodex.text.query import Term

# A first page is at most the largest limit and one more (whether more follow).
DEPTH = config.MAX_SEARCH_LIMIT + 1
# The average document length may move this far from the band's before it is rebuilt;
# the band is built for a slightly wider range, so rounding at its ends cannot matter.
SPREAD = 0.2
BUILD_SPREAD = 0.22
# Matches ranked in a build's first pass: most words' candidates are among them.
FIRST_FETCH = 4096

# BM25 as FTS5 computes it (``fts5_aux.c``).
K1 = 1.2
B = 0.75
_MEMBER = struct.Struct("<qII")

Member = tuple[int, int, int]  # (stored rowid, tf, D)
Stamp = tuple[int, bytes | None]  # (catalog revision, FTS5 totals record)


class Band(msgspec.Struct):
    term: str
    filter: str  # the default filter it holds documents of (``_filter_key``)
    revision: int
    totals: bytes
    avgdl: float  # the average length it was built around
    hits: int  # documents of the whole table with the word (for the idf)
    members: list[Member]


# -- the catalog's statistics --------------------------------------------------------


def _varints(data: bytes) -> Iterator[int]:
    """SQLite's varints (FTS5's records use them): 7 bits a byte, the 9th byte whole."""
    i, end = 0, len(data)
    while i < end:
        value = 0
        for j in range(9):
            byte = data[i]
            i += 1
            if j == 8:
                value = value << 8 | byte
                break
            value = value << 7 | (byte & 0x7F)
            if byte < 0x80:
                break
        yield value


def totals_record(db: sqlite3.Connection) -> bytes | None:
    """FTS5's record of ``documents``' row count and total tokens (changes with every
    committed insert or delete)."""
    row = db.execute("SELECT block FROM documents_data WHERE id = 1").fetchone()
    return None if row is None else bytes(row[0])


def _average(totals: bytes) -> tuple[int, float]:
    rows, tokens = (list(_varints(totals)) + [0, 0])[:2]
    return rows, (float(tokens) / float(rows) if rows else 0.0)


def stamp(db: sqlite3.Connection) -> Stamp:
    return read_revision(db), totals_record(db)


def _idf(rows: int, hits: int) -> float:
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def _documents_with(db: sqlite3.Connection, match: str) -> int:
    """How many documents of the whole table match: BM25's ``nHit``, for the idf."""
    return int(
        db.execute("SELECT count(*) FROM documents WHERE documents MATCH ?", (match,)).fetchone()[0]
    )


def _rank(idf: float, tf: int, size: int, avgdl: float) -> float:
    """FTS5's ``bm25()`` of one phrase in a one-column table, step for step."""
    return -1.0 * (idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * size / avgdl))))


# -- which searches a band answers ---------------------------------------------------


def band_term(plan: Plan) -> str | None:
    """The word of a search a band can answer: one word, relevance order, the default
    filters (the band's own filter is compared too)."""
    tree = plan.query.tree
    if (
        plan.sort != "relevance"
        or plan.tools
        or plan.sources_sql is not None
        or plan.since is not None
        or plan.until is not None
        or plan.session_keys
        or plan.include_subagents
    ):
        return None
    if not isinstance(tree, Term) or tree.kind in ("prefix", "cjk1") or len(tree.tokens) != 1:
        return None
    return str(tree.tokens[0])


def _filter_key(where: Where) -> str:
    return msgspec.json.encode([where.sql, [str(p) for p in where.params]]).decode()


def _admits(plan: Plan) -> Callable[[int], bool]:
    """The default filter (``band_term``'s plans) on a stored rowid, here."""
    return DOCUMENTS.admits(plan.kinds)


def _default_plan(catalog: Catalog, term: str) -> Plan | None:
    with contextlib.suppress(QueryError):
        plan = make_plan(catalog, SearchRequest(query=term))
        if band_term(plan) == term:
            return plan
    return None


# -- a search's first page -----------------------------------------------------------


def first(catalog: Catalog, plan: Plan, count: int) -> list[tuple[float, int, float]] | None:
    """The first ``count`` (rank, stored rowid, rank) rows of ``documents`` for the
    plan, from its word's band; None when no current band answers it."""
    if count > DEPTH:
        return None
    term = band_term(plan)
    if term is None:
        return None
    db = catalog.db
    try:
        with _snapshot(db):
            row = db.execute(
                "SELECT filter, revision, totals, avgdl, hits, members FROM bands WHERE term = ?",
                (term,),
            ).fetchone()
            if row is None:
                return None
            now = stamp(db)
    except sqlite3.OperationalError:
        return None  # a catalog opened read-only at another schema: FTS5 ranks
    band_filter, revision, totals, built_at, hits, members = row
    if (revision, bytes(totals)) != now or band_filter != _filter_key(plan.where("documents")):
        return None
    rows, avgdl = _average(bytes(totals))
    if not _within(avgdl, built_at):
        return None
    idf = _idf(rows, int(hits))
    ranked = sorted(
        (_rank(idf, tf, size, avgdl), rowid) for rowid, tf, size in _MEMBER.iter_unpack(members)
    )
    return [(rank, rowid, rank) for rank, rowid in ranked[:count]]


@contextlib.contextmanager
def _snapshot(db: sqlite3.Connection) -> Iterator[None]:
    """One read snapshot: the caller's transaction when it is in one."""
    if db.in_transaction:
        yield
        return
    with transaction(db, "BEGIN"):
        yield


def _within(avgdl: float, built_at: float) -> bool:
    return built_at * (1 - SPREAD) <= avgdl <= built_at * (1 + SPREAD)


# -- building ------------------------------------------------------------------------


def _band(members: Sequence[Member], avgdl: float) -> list[Member]:
    """The documents beaten at both ends of the build range by fewer than ``DEPTH``
    others (and every other one is beaten at both ends by ``DEPTH`` of them).

    In the order of the low end, the documents before one beat it there; of those,
    the ones that also beat it at the high end are those ranked before it there. So
    a document belongs when fewer than ``DEPTH`` of the high-end ranks seen before
    it are lower than its own: only the ``DEPTH`` lowest need keeping.

    Members, not just documents, beat each left-out one ``y`` (``follow`` relies on
    it), as beating at both ends is transitive. If left-out documents beat ``y``, take
    one, ``x``, that no other of them beats: ``DEPTH`` documents beat ``x``, so ``y``
    too, and by that choice none of them is left out. Otherwise all of the ``DEPTH``
    that beat ``y`` are members.
    """
    low, high = avgdl * (1 - BUILD_SPREAD), avgdl * (1 + BUILD_SPREAD)

    def order(at: float) -> list[int]:
        top, scale = K1 + 1.0, K1 * B / at
        keys = [
            (-(tf * top) / (tf + K1 * (1 - B) + scale * size), rowid, i)
            for i, (rowid, tf, size) in enumerate(members)
        ]
        keys.sort()
        return [i for _, _, i in keys]

    high_rank = [0] * len(members)
    for place, i in enumerate(order(high)):
        high_rank[i] = place
    lowest: list[int] = []
    out: list[Member] = []
    for i in order(low):
        place = high_rank[i]
        if bisect.bisect_left(lowest, place) < DEPTH:
            out.append(members[i])
            bisect.insort(lowest, place)
            if len(lowest) > DEPTH:
                lowest.pop()
    out.sort()
    return out


def build(catalog: Catalog, term: str, db: sqlite3.Connection | None = None) -> Band | None:
    """A band of ``term`` for the default filters, exact for the catalog as ``db`` (by
    default its own connection) reads it, inside a transaction; None when FTS5's
    scores cannot be matched here."""
    plan = _default_plan(catalog, term)
    if plan is None:
        return None
    db = catalog.db if db is None else db
    revision, totals = stamp(db)
    if totals is None:
        return None
    rows, avgdl = _average(totals)
    match = plan.match("documents")
    hits = _documents_with(db, match)
    if not rows or not hits:
        return None
    where = plan.where("documents")
    idf = _idf(rows, hits)
    matches = f"FROM documents WHERE documents MATCH ?{where.text()}"
    params = [match, *where.params]
    # The best-ranked matches: the first DEPTH set the floor, and for most words every
    # candidate is among the first few thousand.
    ranked = db.execute(
        f"SELECT rowid, rank {matches} ORDER BY rank, rowid LIMIT ?", [*params, FIRST_FETCH]
    ).fetchall()
    head = _sized(db, ranked[:DEPTH])
    floor = _floor(_members(head, idf, avgdl) or [], idf, avgdl)
    if len(ranked) < FIRST_FETCH or ranked[-1][1] > floor:
        candidates = head + _sized(db, [r for r in ranked[DEPTH:] if r[1] <= floor])
    else:
        # Words whose first documents are much alike (a tool's name, a path) have tens
        # of thousands of candidates: their lengths come with them, in one pass.
        candidates = [
            (rowid, rank, _size(sz))
            for rowid, rank, sz in db.execute(
                "SELECT documents.rowid, documents.rank, documents_docsize.sz FROM documents "
                "JOIN documents_docsize ON documents_docsize.id = documents.rowid "
                f"WHERE documents MATCH ?{where.text()} AND documents.rank <= ?",
                [*params, floor],
            )
        ]
    members = _members(_untied(candidates), idf, avgdl)
    if members is None:
        return None
    return Band(
        term=term,
        filter=_filter_key(where),
        revision=revision,
        totals=totals,
        avgdl=avgdl,
        hits=hits,
        members=_band(members, avgdl),
    )


def _untied(candidates: list[tuple[int, float, int]]) -> list[tuple[int, float, int]]:
    """The candidates but those with ``DEPTH`` twins before them: documents of one
    score and one length have one tf, so they tie at every average length and the
    first ``DEPTH`` of them by rowid beat the rest everywhere."""
    candidates.sort(key=lambda c: (c[1], c[0]))
    seen: dict[tuple[float, int], int] = {}
    out = []
    for candidate in candidates:
        key = (candidate[1], candidate[2])
        count = seen.get(key, 0)
        if count < DEPTH:
            seen[key] = count + 1
            out.append(candidate)
    return out


def _members(
    candidates: list[tuple[int, float, int]], idf: float, avgdl: float
) -> list[Member] | None:
    """(rowid, tf, D) of (rowid, rank, D) matches, tf from FTS5's own score (``idf * tf
    * (k1 + 1) / (tf + L)``); None when a score computed here is not FTS5's to the bit
    (another platform's arithmetic: no band)."""
    out: list[Member] = []
    for rowid, rank, size in candidates:
        share = -rank / idf
        tf = round(share * K1 * (1 - B + B * size / avgdl) / (K1 + 1.0 - share))
        if tf < 1 or _rank(idf, tf, size, avgdl) != rank:
            return None
        out.append((rowid, tf, size))
    return out


def _floor(head: list[Member], idf: float, avgdl: float) -> float:
    """The worst rank now of a document that may belong to the band (``-inf``: none).

    The first ``DEPTH`` (``head``) set a bar at each end of the build range: the
    worst of their scores there. A document scores less at the low end than now, and
    at the high end less than ``(k1 + 1) / (1 + ((k1 + 1) / s - 1) / ρ)`` for a score
    ``s`` now (ρ: the high end over the current average; the limit of a large tf).
    Under both bars, all of ``head`` beat it at both ends; both bounds grow with
    ``s``, so the candidates are the documents ranked down to one score.
    """
    if not head:
        return -math.inf
    if len(head) < DEPTH:
        return math.inf  # every match belongs
    low, high = avgdl * (1 - BUILD_SPREAD), avgdl * (1 + BUILD_SPREAD)
    bar_low = -max(_rank(1.0, tf, size, low) for _, tf, size in head)
    bar_high = -max(_rank(1.0, tf, size, high) for _, tf, size in head)
    top, rho = K1 + 1.0, 1 + BUILD_SPREAD
    # The score now whose high-end bound is the high bar.
    at_high = top / (1 + rho * (top / bar_high - 1))
    least = min(bar_low, at_high) * (1 - 1e-9)  # rounding cannot drop a candidate
    return -least * idf


def _sized(db: sqlite3.Connection, ranked: list[tuple[int, float]]) -> list[tuple[int, float, int]]:
    """(rowid, rank) rows with each document's length."""
    sizes = _sizes(db, [rowid for rowid, _ in ranked])
    return [(rowid, rank, sizes[rowid]) for rowid, rank in ranked]


def _size(blob: bytes) -> int:
    """A ``docsize`` record's first column: one varint."""
    data = bytes(blob)
    return data[0] if data[0] < 0x80 else next(_varints(data))


def _sizes(db: sqlite3.Connection, rowids: list[int]) -> dict[int, int]:
    """Each document's length in tokens (FTS5's ``docsize``: one varint a column)."""
    out: dict[int, int] = {}
    for chunk in bound_runs(rowids):
        for rowid, size in db.execute(
            f"SELECT id, sz FROM documents_docsize WHERE id IN ({marks(chunk)})", chunk
        ):
            out[int(rowid)] = _size(size)
    return out


# -- storage -------------------------------------------------------------------------


def _store(db: sqlite3.Connection, band: Band) -> None:
    db.execute(
        "INSERT INTO bands(term, filter, revision, totals, avgdl, hits, members) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(term) DO UPDATE SET "
        "filter = excluded.filter, revision = excluded.revision, totals = excluded.totals, "
        "avgdl = excluded.avgdl, hits = excluded.hits, members = excluded.members",
        (
            band.term,
            band.filter,
            band.revision,
            band.totals,
            band.avgdl,
            band.hits,
            b"".join(_MEMBER.pack(*m) for m in band.members),
        ),
    )


def _load(row: Sequence[Any]) -> Band:
    term, band_filter, revision, totals, avgdl, hits, members = row
    return Band(
        term=str(term),
        filter=str(band_filter),
        revision=int(revision),
        totals=bytes(totals),
        avgdl=float(avgdl),
        hits=int(hits),
        members=list(_MEMBER.iter_unpack(members)),
    )


def stored(db: sqlite3.Connection) -> dict[str, Band]:
    """Every band in the catalog, current or not."""
    return {
        band.term: band
        for band in map(
            _load,
            db.execute(
                "SELECT term, filter, revision, totals, avgdl, hits, members FROM bands"
            ).fetchall(),
        )
    }
