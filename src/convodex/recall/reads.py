"""What recall reads from the catalog, at a hook's cost (issue 26: p95 on 1 GB).

A page of search results pays for things recall never looks at: every hit of the
page hydrated (its message read from the source, a snippet, highlights), though
recall keeps only the hits strong enough to count, which are few; a probe for
sub-agent matches; progress counts. ``strong_hits`` asks for the same candidates and
hydrates only the strong ones. Its answer is ``HistoryService.search``'s hits
filtered by ``strong``: one-hit-per-document lexical candidates come best first, so
the strong ones are their first; whenever that cannot be shown (candidates out of
score order, a strong hit whose source changed underneath, any error) the full
search answers instead, and raises what it raises.

``message_count`` is the catalog's size (a sum over its sources), summed again only
once the catalog changed.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from convodex.catalog.plan import Plan, SearchRequest
    from convodex.catalog.rowids import Candidate
    from convodex.catalog.service import HistoryService
    from convodex.models import Hit

# FTS5's bm25: each phrase adds idf * f * (K1 + 1) / (f + K1 * (1 - b + b * len / avg))
# to a document holding it f times: less than idf * (K1 + 1), however often.
K1: Final = 1.2
COUNTED: Final = 4096  # a word's documents counted up to this (a lower bound beyond)


def strong_hits(
    service: HistoryService,
    request: SearchRequest,
    strong: Callable[[float], bool],
    words: Sequence[str] = (),
) -> list[Hit]:
    """The first ``request.limit`` hits of an ungrouped search whose score is strong
    (``words``: the query's, when it is their OR)."""
    try:
        found = _lean(service, request, strong, words)
    except Exception:  # a catalog error: the full search raises it (or recovers the catalog)
        found = None
    if found is not None:
        return found
    return [hit for hit in service.search(request).hits if strong(hit.score)]


def _lean(
    service: HistoryService,
    request: SearchRequest,
    strong: Callable[[float], bool],
    words: Sequence[str],
) -> list[Hit] | None:
    from convodex import config
    from convodex.catalog.hits import Hydrator
    from convodex.catalog.plan import make_plan
    from convodex.catalog.recent import is_browse

    if request.group or request.cursor or request.page is not None or request.around:
        return None  # a page of another shape: only the full search makes it
    if request.sort != "relevance":
        return None
    if service.scope is not None and request.roots is None:
        request = request.with_roots(service.scope)
    if is_browse(request):
        return None
    searcher = service.searcher()
    plan = make_plan(searcher.catalog, request)
    count = config.search_limit(request.limit)
    candidates = _pruned(searcher.catalog.db, plan, words, strong, count)
    if candidates is None:
        candidates = searcher.candidates(plan, None, count)
    scores = [round(-score, 6) for _, _, score in candidates]  # as a hit carries it
    if any(later > earlier for earlier, later in zip(scores, scores[1:], strict=False)):
        return None
    chosen = [c for c, score in zip(candidates, scores, strict=True) if strong(score)]
    if chosen != candidates[: len(chosen)]:
        return None  # not the first ones: the weak ones' replacements could matter
    hydrator = Hydrator(searcher.catalog, searcher.runtime, searcher.speed)
    hits: list[Hit] = []
    try:
        hydrator.prefetch([rowid for _, rowid, _ in chosen])
        for _, rowid, score in chosen:
            hit = hydrator.hit(rowid, score, plan.query, 0)
            if hit is None:
                return None  # changed underneath: the search puts the next one in its place
            hits.append(hit)
    finally:
        hydrator.queue_changed()
    return hits


def _pruned(
    db: Any, plan: Plan, words: Sequence[str], strong: Callable[[float], bool], count: int
) -> list[Candidate] | None:
    """The plan's first ``count`` candidates among the documents that could be strong,
    or None (the plan's own candidates then): ranking is most of a search's cost
    (BM25 for every document holding any word), and a document holding only common
    words cannot be strong. The words whose most (see ``K1``) sums below ``strong``
    are the common ones; every strong document holds one of the others, so ranking
    just those documents, by the same BM25 (FTS5 counts each word over the whole
    index), puts the same strong ones first in the same order."""
    from convodex.catalog.rowids import TABLES

    phrases = [f'("{word}")' for word in words]
    if not phrases or plan.tables() != ["documents"] or plan.sort != "relevance":
        return None
    if plan.match("documents") != " OR ".join(phrases):
        return None  # another shape of query than the OR of single words
    rows = _row_count(db)
    if rows is None:
        return None
    most: list[tuple[float, str]] = []
    for phrase in phrases:
        held = db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM documents WHERE documents MATCH ? LIMIT ?)",
            (phrase, COUNTED),
        ).fetchone()[0]
        if held:  # a word no document holds adds nothing anywhere
            idf = max(math.log((rows + 0.5) / (held + 0.5)), 1e-6)  # held: at most as many
            most.append(((K1 + 1) * idf, phrase))
    most.sort()
    common, total = 0, 0.0
    # 1e-5: above any rounding of a score that stays below the sum (hits round to 1e-6).
    while common < len(most) and not strong(total + most[common][0] + 1e-5):
        total += most[common][0]
        common += 1
    if common == len(most):
        return []  # no document can be strong
    if common == 0:
        return None  # every word could make one strong alone: nothing to leave out
    rare = " OR ".join(phrase for _, phrase in most[common:])
    where = plan.where("documents")
    # ``+``: a filter on each match before ranking, never a rowid lookup per value.
    sql = (
        f"SELECT rank AS k, rowid, rank FROM documents WHERE documents MATCH ?{where.text()} "
        "AND +documents.rowid IN (SELECT rowid FROM documents WHERE documents MATCH ?) "
        "ORDER BY k, rowid LIMIT ?"
    )
    params = [plan.match("documents"), *where.params, rare, count]
    return list(TABLES["documents"].ranked(db.execute(sql, params)))


def _row_count(db: Any) -> int | None:
    """The documents FTS5 ranks against (the first varint of its averages record)."""
    row = db.execute("SELECT block FROM documents_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return None
    value = 0
    for n, byte in enumerate(bytes(row[0])[:9]):
        if n == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return None


# connection's id -> (the connection, its data_version and revision, the count). The
# connection is held so that its id cannot name another one while it is kept here.
_counts: dict[int, tuple[object, tuple[int, int], int]] = {}
_counts_lock = threading.Lock()
KEPT_COUNTS = 16


def message_count(service: HistoryService) -> int:
    """``service.message_count()``, kept per connection until the catalog changes: a
    commit by another connection (SQLite's ``data_version``) or by this one (each
    indexing commit advances the catalog's revision)."""
    catalog = service.reader()
    db = catalog.db
    try:
        seen = (int(db.execute("PRAGMA data_version").fetchone()[0]), catalog.revision())
    except Exception:  # a catalog error: the service's own count raises it (or recovers)
        return service.message_count()
    with _counts_lock:
        kept = _counts.get(id(db))
    if kept is not None and kept[0] is db and kept[1] == seen:
        return kept[2]
    count = service.message_count()
    with _counts_lock:
        if len(_counts) >= KEPT_COUNTS:
            _counts.clear()
        _counts[id(db)] = (db, seen, count)
    return count
