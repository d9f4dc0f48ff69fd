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

Kept current: a band is stamped with the catalog revision and FTS5's totals record it
is exact for, and a search uses it only when both are the catalog's, read in one
snapshot. After a commit that adds a few documents, the indexer takes into each
current band the new documents it must hold and moves its stamp (``follow``); a
commit that deletes a member, a large one, or an average that drifted out of the
range leaves the band stale, and the indexer rebuilds it after its run
(``refresh``), with the list of frequent words.
"""

from __future__ import annotations

import bisect
import contextlib
import math
import re
import struct
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from convodex import config
from convodex.catalog.db import Catalog, read_revision
from convodex.catalog.plan import Plan, SearchRequest, Where, make_plan
from convodex.catalog.rowids import DOCUMENTS
from convodex.catalog.speed.settings import BAND_LEAST_MATCHES, BAND_MOST
from convodex.errors import QueryError
from convodex.sqlite import bound_runs, sqlite3, transaction
from convodex.text.query import Term

if TYPE_CHECKING:
    from convodex.catalog.commits import Changes
    from convodex.catalog.speed.split import Shares

# A first page is at most the largest limit and one more (whether more follow).
DEPTH = config.MAX_SEARCH_LIMIT + 1
# The average document length may move this far from the band's before it is rebuilt;
# the band is built for a slightly wider range, so rounding at its ends cannot matter.
SPREAD = 0.2
BUILD_SPREAD = 0.22
# Words with at least this many documents get a band, the most frequent first: FTS5
# ranks fewer in about 15 ms, the whole budget of a first page (issue 14). The words
# chosen hold at most MATCH_BUDGET times as many matches as the table has documents:
# building a band ranks each of its word's matches about once, and a first index
# should not pay more than ranking the table once for them (210 MB of native
# sessions: the 32 words over 20,000 documents took 2.4 s to build, the six most
# frequent 0.7 s, the two within this budget 0.3 s besides the 0.2 s that finding the
# frequent words takes).
LEAST_MATCHES = BAND_LEAST_MATCHES
MATCH_BUDGET = 1.0
MOST_BANDS = BAND_MOST
# Matches ranked in a build's first pass: most words' candidates are among them.
FIRST_FETCH = 4096
# A commit of more documents, or more text, than this leaves the bands to ``refresh``:
# taking them in costs a tokenization of each document, and bulk runs commit
# megabytes at once.
FOLLOW_MAX_DOCUMENTS = 4_000
FOLLOW_MAX_CHARACTERS = 2_000_000
# The list of frequent words is chosen again once the catalog's document count moved
# this much since it was last chosen.
RESELECT_CHANGE = 0.1

# BM25 as FTS5 computes it (``fts5_aux.c``).
K1 = 1.2
B = 0.75
# A token of the ascii tokenizer with ``_`` as a token character: every other ASCII
# character separates, every non-ASCII character belongs to a token. Written as the
# separators' complement: the class of every non-ASCII code point takes 3.7 ms to
# compile, paid by every command that searches; this takes 0.2 ms.
_TOKEN = re.compile(r"[^\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]+")
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
    codes = {DOCUMENTS.codes[k] for k in plan.kinds if k in DOCUMENTS.codes}
    mask, bit = DOCUMENTS.kind_mask, DOCUMENTS.subagent_bit
    return lambda rowid: not rowid & bit and (rowid & mask) in codes


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
        marks = ", ".join("?" for _ in chunk)
        for rowid, size in db.execute(
            f"SELECT id, sz FROM documents_docsize WHERE id IN ({marks})", chunk
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


# -- keeping bands current -----------------------------------------------------------


def frequent_terms(catalog: Catalog, least: int, most: int, budget: float) -> list[str]:
    """The words in at least ``least`` documents, most frequent first, at most ``most``
    and within ``budget`` times the table's documents in matches (FTS5's own
    vocabulary: one pass over the index, 80–120 ms for 210 MB of sessions)."""
    db = catalog.db
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.documents_vocabulary "
        "USING fts5vocab(main, documents, row)"
    )
    rows = db.execute(
        "SELECT term, doc FROM temp.documents_vocabulary WHERE doc >= ? ORDER BY doc DESC, term",
        (least,),
    ).fetchall()
    totals = totals_record(db)
    left = budget * (_average(totals)[0] if totals else 0)
    chosen: list[str] = []
    for term, documents in rows:
        if len(chosen) == most:
            break
        if _default_plan(catalog, str(term)) is None:
            continue  # no query is this one word (a tool's marked name)
        left -= int(documents)
        if left < 0:
            break
        chosen.append(str(term))
    return chosen


def refresh(
    catalog: Catalog,
    least: int | None = None,
    most: int | None = None,
    budget: float | None = None,
    shares: Shares | None = None,
) -> int:
    """After an indexing run: choose the frequent words again when the catalog moved
    enough since, and rebuild every band that is not current, on every core (a
    band's build is mostly FTS5 ranking every match, which releases the interpreter
    lock; ``shares``: the connections and threads, none: this connection alone).
    Returns how many were built. ``least``, ``most`` and ``budget``: ``LEAST_MATCHES``,
    ``MOST_BANDS`` and ``MATCH_BUDGET`` unless given."""
    catalog.require_writable()
    least = LEAST_MATCHES if least is None else least
    most = MOST_BANDS if most is None else most
    budget = MATCH_BUDGET if budget is None else budget
    db = catalog.db
    with _snapshot(db):
        now = stamp(db)
        have = stored(db)
        row = db.execute("SELECT value FROM catalog_meta WHERE key = 'bands_chosen'").fetchone()
    rows = _average(now[1])[0] if now[1] else 0
    # When the words were last chosen: the row count then, and the choice's bounds.
    chosen_at, chosen_by = (-1, None) if row is None else _chosen(str(row[0]))
    chosen = (
        chosen_by != [least, most, budget]
        or chosen_at < 0
        or abs(rows - chosen_at) > RESELECT_CHANGE * max(chosen_at, 1)
    )
    terms = frequent_terms(catalog, least, most, budget) if chosen else list(have)
    stale = [
        t
        for t in terms
        if t not in have
        or (have[t].revision, have[t].totals) != now
        or not _within(_average(have[t].totals)[1], have[t].avgdl)
    ]
    built = _build_all(catalog, stale, now, shares)
    if built is None:
        return 0  # the catalog moved on meanwhile: the next run builds them
    with catalog.transaction() as tx:
        if stamp(tx) != now:
            return 0
        gone = [t for t in have if t not in terms]
        gone += [t for t, band in built.items() if band is None]
        tx.executemany("DELETE FROM bands WHERE term = ?", [(t,) for t in gone])
        for band in built.values():
            if band is not None:
                _store(tx, band)
        if chosen:
            tx.execute(
                "INSERT INTO catalog_meta(key, value) VALUES ('bands_chosen', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (msgspec.json.encode([rows, least, most, budget]).decode(),),
            )
    return sum(band is not None for band in built.values())


def _chosen(value: str) -> tuple[int, list[float] | None]:
    with contextlib.suppress(msgspec.DecodeError, ValueError, TypeError):
        rows, least, most, budget = msgspec.json.decode(value)
        return int(rows), [int(least), int(most), float(budget)]
    return -1, None


def _build_all(
    catalog: Catalog, terms: list[str], now: Stamp, shares: Shares | None
) -> dict[str, Band | None] | None:
    """Bands of ``terms`` as of ``now``, the terms dealt out to one read connection a
    share (this one's and spares); None when a connection reads another state."""
    if not terms:
        return {}
    parts = 1 if shares is None else max(1, min(shares.parts, len(terms)))
    groups = [terms[i::parts] for i in range(parts)]

    def on(db: sqlite3.Connection, group: list[str]) -> dict[str, Band | None] | None:
        with _snapshot(db):
            if stamp(db) != now:
                return None
            return {term: build(catalog, term, db) for term in group}

    def lent(group: list[str]) -> dict[str, Band | None] | None:
        assert shares is not None
        with shares.lend() as db:
            return on(db, group)

    futures = [] if shares is None else [shares.threads.submit(lent, g) for g in groups[1:]]
    try:
        with catalog.lock:  # its own connection: no other thread's statement between
            results = [on(catalog.db, groups[0])]
    finally:
        results += [f.result() for f in futures]
    out: dict[str, Band | None] = {}
    for result in results:
        if result is None:
            return None
        out.update(result)
    return out


def follow(catalog: Catalog, before: Stamp, after_revision: int, changes: Changes) -> int:
    """After a commit (``before``: the stamp it started from; it moved the revision to
    ``after_revision``): take its new documents into each band that was current, and
    stamp those bands current again. Returns how many moved on.

    A band loses its stamp instead when the commit deleted one of its members (a
    document out of the band may belong now), or added more documents than a
    commit's tokenization should cost (``FOLLOW_MAX_DOCUMENTS``,
    ``FOLLOW_MAX_CHARACTERS``): ``refresh`` builds it again after the run.
    """
    if len(changes.documents) > FOLLOW_MAX_DOCUMENTS:
        return 0
    if sum(len(text) for _, text in changes.documents) > FOLLOW_MAX_CHARACTERS:
        return 0
    db = catalog.db
    current = db.execute(
        "SELECT term FROM bands WHERE revision = ? AND totals IS ?", before
    ).fetchall()
    if not current:
        return 0
    followed = 0
    with catalog.transaction() as tx:
        revision, totals = stamp(tx)
        if revision != after_revision or totals is None:
            return 0  # another commit landed since: refresh catches up
        bands = [b for b in stored(tx).values() if (b.revision, b.totals) == before]
        counted = _count_terms(changes.documents, {b.term for b in bands})
        for band in bands:
            updated = _followed(catalog, band, changes, counted)
            if updated is None:
                continue
            updated.revision, updated.totals = revision, totals
            _store(tx, updated)
            followed += 1
    return followed


def _count_terms(
    documents: list[tuple[int, str]], terms: set[str]
) -> dict[str, list[tuple[int, int, int]]]:
    """For each word, (rowid, tf, D) of the new documents it occurs in, tokenized as
    the ascii tokenizer does (folding ASCII letters only)."""
    out: dict[str, list[tuple[int, int, int]]] = {t: [] for t in terms}
    for rowid, text in documents:
        tokens = _TOKEN.findall(text)
        folded = [t.lower() if t.isascii() else _fold_ascii(t) for t in tokens]
        size = len(folded)
        present = terms.intersection(folded)
        for term in present:
            out[term].append((rowid, folded.count(term), size))
    return out


_ASCII_UPPER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _fold_ascii(token: str) -> str:
    return token.translate(_ASCII_UPPER)


def _followed(
    catalog: Catalog, band: Band, changes: Changes, counted: dict[str, list[Member]]
) -> Band | None:
    shift = DOCUMENTS.slot_shift
    if changes.wiped and any((rowid >> shift) in changes.wiped for rowid, _, _ in band.members):
        return None
    plan = _default_plan(catalog, band.term)
    if plan is None or _filter_key(plan.where("documents")) != band.filter:
        return None
    found = counted.get(band.term, [])
    if changes.wiped:
        # Deleted rows took their counts with them: count the word's documents again.
        band.hits = _documents_with(catalog.db, plan.match("documents"))
    else:
        band.hits += len(found)
    admits = _admits(plan)
    new = [m for m in found if admits(m[0])]
    if new:
        known = {m[0] for m in band.members}
        band.members = _band([*band.members, *(m for m in new if m[0] not in known)], band.avgdl)
    return band
