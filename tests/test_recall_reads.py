"""What recall reads from a real catalog (``convodex.recall.reads``, issue 26): only the
strong hits of a search, yet exactly the ones the full search gives when filtered the
same way, also when a source changed underneath; and the catalog's size, followed
as indexing adds to it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from convodex.catalog.plan import SearchRequest
from convodex.catalog.service import HistoryService
from convodex.models import Hit
from convodex.recall.core import KINDS
from convodex.recall.reads import message_count, strong_hits
from helpers import write_claude_session

NOW = 1_790_000_000_000
WORDS = ["kafka", "consumer", "rebalance", "offset", "commit", "haiku", "nowhere"]
QUERY = " OR ".join(WORDS)


def sid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def history(root: Path) -> dict[str, Path]:
    """Sessions sharing more or fewer of the query's words (so scores spread out)."""
    texts = [
        "the kafka consumer offset commit fails with rebalance in progress",
        "kafka consumer rebalance again after the deploy",
        "the consumer lag on kafka grows overnight",
        "commit the offset synchronously",
        "kafka retention is seven days",
        "the rebalance listener logs twice",
        "write a haiku about autumn leaves",
        "kafka kafka kafka",
        "the consumer group",
    ]
    paths = {}
    for n, text in enumerate(texts * 3):
        at = NOW - (n + 1) * 3_600_000
        turns = [("user", f"{text} (case {n})", at), ("assistant", f"noted: {text}", at + 1)]
        paths[sid(n)] = write_claude_session(root, sid(n), f"/work/app{n % 2}", turns)
    return paths


def request(**fields: object) -> SearchRequest:
    return SearchRequest(query=QUERY, kinds=KINDS, limit=16, group=False, **fields)  # type: ignore[arg-type]


def refs(hits: list[Hit]) -> list[tuple[str, float]]:
    return [(hit.ref, hit.score) for hit in hits]


def at_least(floor: float) -> Callable[[float], bool]:
    return lambda score: score >= floor


def full(service: HistoryService, asked: SearchRequest, floor: float) -> list[Hit]:
    return [hit for hit in service.search(asked).hits if hit.score >= floor]


def test_the_strong_hits_are_the_full_searchs_strong_hits(root: Path, cache_dir: Path) -> None:
    history(root)
    with HistoryService.open(cache_dir, [root]) as service:
        service.index()
        scores = sorted({hit.score for hit in service.search(request()).hits}, reverse=True)
        assert len(scores) > 3  # a spread to cut at
        for floor in [*scores, 0.0, scores[0] + 1, scores[0] * 2, 1000.0]:
            for asked in (request(), request(projects=("/work/app1",))):
                for words in ((), WORDS):  # with the words: the common ones' matches unranked
                    lean = strong_hits(service, asked, at_least(floor), words)
                    assert refs(lean) == refs(full(service, asked, floor))
                    assert all(hit.snippet and hit.session_title for hit in lean)
        assert strong_hits(service, request(), lambda score: score > scores[0], WORDS) == []


def test_a_strong_hit_whose_source_changed_gives_way_as_in_the_full_search(
    root: Path, cache_dir: Path
) -> None:
    paths = history(root)
    with HistoryService.open(cache_dir, [root]) as service:
        service.index()
        best = service.search(request()).hits
        floor = best[len(best) // 2].score
        paths[best[0].session_id].write_text("", "utf-8")  # emptied since it was indexed
        lean = strong_hits(service, request(), lambda score: score >= floor)
        assert refs(lean) == refs(full(service, request(), floor))
        assert best[0].session_id not in {hit.session_id for hit in lean}
        assert lean  # the others still stand


def test_the_catalogs_size_follows_what_indexing_adds(root: Path, cache_dir: Path) -> None:
    history(root)
    with HistoryService.open(cache_dir, [root]) as service:
        service.index()
        before = message_count(service)
        assert before == service.message_count() > 0
        assert message_count(service) == before
        turns = [("user", "one more question", NOW), ("assistant", "one more answer", NOW + 1)]
        write_claude_session(root, sid(99), "/work/app0", turns)
        service.index()  # the same connection commits: the revision moves on
        assert message_count(service) == service.message_count() == before + 2
