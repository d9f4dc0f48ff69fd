"""Keeping bands current (``bands``): after a commit, after an indexing run.

A band is stamped with the catalog revision and FTS5's totals record it is exact for.
After a commit that adds a few documents, the indexer takes into each current band the
new documents it must hold and moves its stamp (``follow``); a commit that deletes a
member, a large one, or an average that drifted out of the range leaves the band
stale, and the indexer rebuilds it after its run (``refresh``), with the list of
frequent words.
"""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING

import msgspec

from convodex.catalog.db import Catalog
from convodex.catalog.rowids import DOCUMENTS
from convodex.catalog.speed.bands import (
    Band,
    Member,
    Stamp,
    _admits,
    _average,
    _band,
    _default_plan,
    _documents_with,
    _filter_key,
    _snapshot,
    _store,
    _within,
    build,
    stamp,
    stored,
    totals_record,
)
from convodex.catalog.speed.settings import BAND_LEAST_MATCHES, BAND_MOST
from convodex.sqlite import sqlite3

if TYPE_CHECKING:
    from convodex.catalog.commits import Changes
    from convodex.catalog.speed.split import Shares

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
# A commit of more documents, or more text, than this leaves the bands to ``refresh``:
# taking them in costs a tokenization of each document, and bulk runs commit
# megabytes at once.
FOLLOW_MAX_DOCUMENTS = 4_000
FOLLOW_MAX_CHARACTERS = 2_000_000
# The list of frequent words is chosen again once the catalog's document count moved
# this much since it was last chosen.
RESELECT_CHANGE = 0.1
# A token of the ascii tokenizer with ``_`` as a token character: every other ASCII
# character separates, every non-ASCII character belongs to a token. Written as the
# separators' complement: the class of every non-ASCII code point takes 3.7 ms to
# compile, paid by every command that searches; this takes 0.2 ms.
_TOKEN = re.compile(r"[^\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]+")


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
    slot = DOCUMENTS.slot
    if changes.wiped and any(slot(rowid) in changes.wiped for rowid, _, _ in band.members):
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
