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

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convodex.catalog.plan import SearchRequest
    from convodex.catalog.service import HistoryService
    from convodex.models import Hit


def strong_hits(
    service: HistoryService, request: SearchRequest, strong: Callable[[float], bool]
) -> list[Hit]:
    """The first ``request.limit`` hits of an ungrouped search whose score is strong."""
    try:
        found = _lean(service, request, strong)
    except Exception:  # a catalog error: the full search raises it (or recovers the catalog)
        found = None
    if found is not None:
        return found
    return [hit for hit in service.search(request).hits if strong(hit.score)]


def _lean(
    service: HistoryService, request: SearchRequest, strong: Callable[[float], bool]
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
    candidates = searcher.candidates(plan, None, config.search_limit(request.limit))
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
