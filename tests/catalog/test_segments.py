"""Merged index segments (``catalog.speed.segments``), the merge's contract: after a
service's full scan a catalog of many FTS5 segments has one a table, and every page of
every search is the one it was before, score for score."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import corpus
from convodex.catalog.db import Catalog, open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.plan import SearchRequest
from convodex.catalog.scheduler import Scheduler
from convodex.catalog.search import Searcher
from convodex.catalog.speed import segments
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing
from convodex.models import to_builtins
from live_server import wait_for

QUERIES = ("the", '"return the"', "error OR failed", "迁移", "needle3", "the kind:tool_output")
ROOTS = 6  # each indexed by its own run: a segment a run, more than MERGE_ABOVE


def roots_of(tmp: Path) -> list[Path]:
    """A generated history dealt into ``ROOTS`` directories."""
    files = sorted(Path(corpus.cached("native", 3, 5).out).rglob("*.jsonl"))
    roots = [tmp / f"root{i}" for i in range(ROOTS)]
    for i, file in enumerate(files):
        root = roots[i % ROOTS]
        root.mkdir(exist_ok=True)
        shutil.copy(file, root / file.name)
        meta = file.with_name(file.name + ".meta")
        if meta.exists():
            shutil.copy(meta, root / meta.name)
    return roots


@pytest.fixture
def history(tmp_path: Path) -> Iterator[tuple[Catalog, list[Path]]]:
    roots = roots_of(tmp_path)
    with open_catalog(tmp_path / "cache") as catalog:
        for root in roots:
            Indexer(catalog).run([root])
        yield catalog, roots


def pages(catalog: Catalog) -> list[dict[str, Any]]:
    """Every page of every query, in every order, by the core alone."""
    out: list[dict[str, Any]] = []
    searcher = Searcher(catalog)
    for query in QUERIES:
        for sort in ("relevance", "newest"):
            cursor = None
            while True:
                request = SearchRequest(query=query, sort=sort, limit=20, cursor=cursor)
                page = to_builtins(searcher.search(request))
                page.pop("progress")
                out.append(page)
                cursor = page["nextCursor"]
                if cursor is None:
                    break
    return out


def test_a_merge_leaves_one_segment_and_every_page_as_it_was(
    history: tuple[Catalog, list[Path]],
) -> None:
    catalog, _ = history
    assert segments.segments(catalog, "documents") == ROOTS
    before = pages(catalog)
    assert any(page["hits"] for page in before)
    steps = Wing(Accelerators.everything()).after_scan(catalog, lambda: False)
    assert steps >= 1
    assert segments.segments(catalog, "documents") == 1
    assert segments.segments(catalog, "outputs") == 1
    assert pages(catalog) == before


def test_nothing_is_merged_when_off_stopping_or_at_few_segments(
    history: tuple[Catalog, list[Path]],
) -> None:
    catalog, _ = history
    assert Wing().after_scan(catalog, lambda: False) == 0
    assert Wing(Accelerators.everything()).after_scan(catalog, lambda: True) == 0
    few = Wing(Accelerators.everything()).using(merge_above=ROOTS)
    assert few.after_scan(catalog, lambda: False) == 0
    assert segments.segments(catalog, "documents") == ROOTS


def test_a_services_full_scan_merges_its_catalog(
    history: tuple[Catalog, list[Path]],
) -> None:
    catalog, roots = history
    before = pages(catalog)
    scheduler = Scheduler(
        catalog, roots, rescan_seconds=3600, speed=Wing(Accelerators.everything())
    ).start()
    try:
        wait_for(lambda: scheduler.scans_completed == 1, timeout=60)
    finally:
        scheduler.stop()
    assert segments.segments(catalog, "documents") == 1
    assert pages(catalog) == before
