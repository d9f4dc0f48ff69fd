"""One search on several cores (``catalog.speed.split``), the split's contract: the same
pages, in every order and with every filter, as one connection gives, and a safe answer
when a commit lands."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import corpus
from convodex.catalog.db import Catalog, open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.plan import SearchRequest
from convodex.catalog.rowids import DOCUMENTS, TABLES
from convodex.catalog.search import Searcher
from convodex.catalog.speed import split
from convodex.catalog.speed.settings import Accelerators, usable_cpus
from convodex.catalog.speed.wing import Wing
from convodex.errors import ConfigError
from convodex.models import to_builtins
from convodex.sqlite import sqlite3

QUERIES = (
    "the",
    "the kind:tool_output",
    "error OR failed",
    '"return the"',
    "the project:atlas",
    "the -error",
    "迁移",
    "needle3",
    "def* since:2025-06-01",
)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    cache = tmp_path_factory.mktemp("split")
    with open_catalog(cache) as catalog:
        Indexer(catalog).run([Path(corpus.cached("native", 6, 12).out)])
        yield catalog


@pytest.fixture
def four() -> Iterator[Wing]:
    """Four shares even on a machine with fewer CPUs (the answers must not change)."""
    wing = Wing(Accelerators(shares=4))
    yield wing
    wing.close()


def search(catalog: Catalog, query: str, speed: Wing, **options: Any) -> dict[str, Any]:
    page = Searcher(catalog, speed=speed).search(SearchRequest(query=query, **options))
    result: dict[str, Any] = to_builtins(page)
    return result


def walk(catalog: Catalog, query: str, sort: str, speed: Wing) -> list[tuple[Any, ...]]:
    """Every hit of a query, page by page, as (session, message, part, kind, score)."""
    out: list[tuple[Any, ...]] = []
    cursor = None
    while True:
        page = search(catalog, query, speed, sort=sort, limit=50, cursor=cursor)
        out.extend(
            (h["sessionPath"], h["messageIndex"], h["partIndex"], h["kind"], h["score"])
            for h in page["hits"]
        )
        cursor = page["nextCursor"]
        if cursor is None:
            return out


@pytest.mark.parametrize("sort", ["relevance", "newest", "oldest"])
def test_every_page_is_the_one_a_single_connection_gives(
    history: Catalog, sort: str, four: Wing
) -> None:
    shares = four.shares(history)
    assert shares is not None and shares.parts == 4
    shared = {q: walk(history, q, sort, four) for q in QUERIES}
    alone = {q: walk(history, q, sort, Wing()) for q in QUERIES}
    assert Wing().shares(history) is None
    assert shared == alone
    assert all(shared[q] for q in ("the", "the kind:tool_output", "迁移", "needle3"))


def test_the_ranges_cover_every_row_once(history: Catalog) -> None:
    for table, layout in TABLES.items():
        ranges = split.rowid_ranges(history, 4, layout)
        assert len(ranges) == 4
        assert ranges[0][0] == 0 and ranges[-1][1] == 2**63 - 1
        assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
        total = history.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        shares = [
            history.db.execute(
                f"SELECT count(*) FROM {table} WHERE rowid BETWEEN ? AND ?", bounds
            ).fetchone()[0]
            for bounds in ranges
        ]
        assert total > 0 and sum(shares) == total
        assert sum(1 for n in shares if n) > 1, f"{table}: one range holds every row"


def test_a_commit_between_the_shares_falls_back_to_one_connection(
    history: Catalog, monkeypatch: pytest.MonkeyPatch, four: Wing
) -> None:
    expected = search(history, "the", Wing(), limit=20)["hits"]
    shares = four.shares(history)
    assert shares is not None
    with pytest.raises(split.SnapshotMoved):
        split.split_query(
            shares,
            history.revision() + 1,
            lambda bounds: ("SELECT 1", []),
            DOCUMENTS,
        )
    asked: list[int] = []

    def moved(*args: Any) -> list[tuple[Any, ...]]:
        asked.append(1)
        raise split.SnapshotMoved

    monkeypatch.setattr(split, "_share", moved)
    assert search(history, "the", four, limit=20)["hits"] == expected
    assert asked  # the shares were asked, and their answer set aside


def test_the_spare_connections_close_with_their_catalog(tmp_path: Path, four: Wing) -> None:
    """A closed catalog leaves no connection open on its file (its last close then
    checkpoints the WAL into the file, whose header other builds read)."""
    catalog = open_catalog(tmp_path)
    Indexer(catalog).run([Path(corpus.cached("native", 6, 12).out)])
    assert search(catalog, "the", four, limit=5)["hits"]
    lent = four.shares(catalog)
    assert lent is not None
    spares = lent.spares.idle
    assert 1 <= len(spares) <= 3  # the other shares' connections, kept for the next search
    catalog.close()
    assert lent.spares.idle == []
    for db in spares:
        with pytest.raises(sqlite3.ProgrammingError):
            db.execute("SELECT 1")


def test_the_settings_narrow_or_turn_off_the_split(monkeypatch: pytest.MonkeyPatch) -> None:
    cpus = usable_cpus()
    monkeypatch.delenv("CONVODEX_ACCELERATORS", raising=False)  # the default: on
    monkeypatch.setenv("CONVODEX_SEARCH_SHARES", "2")
    assert Accelerators.from_config().shares == min(2, cpus)
    monkeypatch.setenv("CONVODEX_SEARCH_SHARES", "1")
    assert Accelerators.from_config().shares == 1
    monkeypatch.setenv("CONVODEX_SEARCH_SHARES", "16")
    assert Accelerators.from_config().shares == min(4, cpus)  # never more than four
    monkeypatch.setenv("CONVODEX_ACCELERATORS", "off")
    assert Accelerators.from_config() == Accelerators()  # every accelerator off
    monkeypatch.setenv("CONVODEX_ACCELERATORS", "on")
    monkeypatch.setenv("CONVODEX_SEARCH_SHARES", "many")
    with pytest.raises(ConfigError, match="CONVODEX_SEARCH_SHARES must be an integer"):
        Accelerators.from_config()
    monkeypatch.setenv("CONVODEX_ACCELERATORS", "eager")
    monkeypatch.setenv("CONVODEX_SEARCH_SHARES", "2")
    eager = Accelerators.from_config()
    assert eager.helper_process and eager.helper_min_bytes == 1 and eager.bands
    monkeypatch.setenv("CONVODEX_ACCELERATORS", "sometimes")
    with pytest.raises(ConfigError, match="CONVODEX_ACCELERATORS must be on, off or eager"):
        Accelerators.from_config()


def spares_in_worker() -> int:
    """Run in a search worker process: the spare connections its catalog keeps."""
    from convodex.catalog.speed import workers

    assert workers._searchers is not None
    searcher = workers._searchers[0]
    shares = searcher.speed.shares(searcher.catalog)
    return 0 if shares is None else len(shares.spares.idle)


def test_a_search_worker_splits_a_search_only_while_it_is_the_only_one(
    history: Catalog,
) -> None:
    """`serve`'s workers: a lone search uses every core, as the CLI's does; under load
    each search stays on its worker's core."""
    from convodex.catalog.speed.workers import SearchPool

    pool = SearchPool(history, Accelerators(shares=2, search_workers=1))
    try:
        expected = search(history, "the", Wing(), limit=20)["hits"]
        page = pool.search(SearchRequest(query="the", limit=20))
        assert to_builtins(page)["hits"] == expected
        spares = pool._pool.submit(spares_in_worker).result()
        assert spares == 1  # its lone search was split in two
        assert pool._running == 0
    finally:
        pool.close()
