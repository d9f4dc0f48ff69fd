#!/usr/bin/env python3
"""Query workflow benchmark (issue 10): first pages and complete walks, in-process.

For a rare word, the common word ``the``, a phrase and a CJK word — each alone, with a
project filter and with a ``since`` filter, in relevance and newest order — prints the
first page's p50/p95 over warm runs (first pages are never served from a kept list),
then pages through every hit of ``the`` in each order and prints hits per second. Each
figure is measured with the accelerators on and off (``--accelerators``), alternately
in the run, with the ratio off/on (``ab.py``).
The corpus is generated once into bench/.corpus/ (see corpus.py) unless --corpus is given.
Usage: bench/bench_query.py [--mb 200] [--seed 1] [--corpus DIR] [--runs 20]
       [--accelerators on,off]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import msgspec

import ab
import corpus
from convodex.catalog.db import open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.plan import SearchRequest
from convodex.catalog.search import Searcher
from convodex.catalog.speed import bands
from convodex.catalog.speed.wing import Wing
from convodex.sources.roots import resolve_root

TARGET_FIRST_PAGE_P95_MS = 30.0
TARGET_COMMON_P95_MS = 60.0


def timed_page(searcher: Searcher, request: SearchRequest) -> tuple[float, int]:
    """Milliseconds of one first page (never from a kept list), and its hits."""
    started = time.perf_counter()
    page = searcher.search(request)
    return (time.perf_counter() - started) * 1000, len(page.hits)


def walk(searcher: Searcher, request: SearchRequest) -> tuple[int, int, float]:
    """(hits, sessions, seconds) of paging through every hit, 200 at a time."""
    searcher.speed.clear_caches()  # a cold walk: the ordered list is built once, in the timing
    started = time.perf_counter()
    cursor: str | None = None
    hits = 0
    sessions: set[str] = set()
    while True:
        page = searcher.search(msgspec.structs.replace(request, limit=200, cursor=cursor))
        hits += len(page.hits)
        sessions.update(h.session_id for h in page.hits)
        cursor = page.next_cursor
        if cursor is None:
            return hits, len(sessions), time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    corpus.add_arguments(ap)
    ab.add_argument(ap)
    ap.add_argument("--runs", type=int, default=20, help="timed runs per query (20)")
    args = ap.parse_args()
    settings: tuple[str, ...] = args.accelerators
    root, manifest = corpus.for_bench(args.corpus, "claude-code", args.mb, args.seed)
    index_root = manifest.root("claude-code") if manifest else root
    rare = manifest.rare_word() if manifest else "needle1"
    print(f"uptime: {ab.uptime()}")
    wings = {setting: Wing(ab.accelerators(setting)) for setting in settings}

    with tempfile.TemporaryDirectory(prefix="convodex-bench-query-") as tmp:
        with open_catalog(Path(tmp)) as catalog:
            started = time.perf_counter()
            # Indexed once, with the accelerators when they are measured (their bands).
            builder = wings["on" if "on" in wings else "off"]
            stats = Indexer(catalog, speed=builder).run([resolve_root(f"{index_root}:claude-code")])
            size = stats.bytes_read / 1e6
            print(
                f"corpus: {root} ({size:.1f} MB, {stats.indexed} sources) "
                f"indexed in {time.perf_counter() - started:.1f} s"
            )
            db = catalog.db
            project = db.execute(
                "SELECT workspace FROM sources WHERE workspace IS NOT NULL "
                "GROUP BY workspace ORDER BY count(*) DESC LIMIT 1"
            ).fetchone()[0]
            total = db.execute("SELECT count(*) FROM messages").fetchone()[0]
            median_at = db.execute(
                "SELECT at FROM messages ORDER BY at LIMIT 1 OFFSET ?", (total // 2,)
            ).fetchone()[0]
            since = datetime.fromtimestamp(median_at / 1000).date().isoformat()
            name = project.rstrip("/").rsplit("/", 1)[-1]
            print(f"filters: project {name!r} ({project}); since {since} (the median message)")
            searchers = {s: Searcher(catalog, speed=wing) for s, wing in wings.items()}
            queries = {"rare": rare, "common": "the", "phrase": '"return the"', "cjk": "迁移"}
            filters: dict[str, dict[str, object]] = {
                "": {},
                "+project": {"projects": (name,)},
                "+since": {"since": since},
            }
            banded = ", ".join(sorted(bands.stored(db))) or "none"
            print(f"words with a band (bands.py): {banded}")
            shares = {s: wing.settings.shares for s, wing in wings.items()}
            print(f"shares (split.py): {shares}")
            pages = ab.Figures(settings)
            misses = []
            for label, query in queries.items():
                target = TARGET_COMMON_P95_MS if label == "common" else TARGET_FIRST_PAGE_P95_MS
                for suffix, extra in filters.items():
                    for sort in ("relevance", "newest"):
                        request = msgspec.structs.replace(
                            SearchRequest(query=query, sort=sort), **extra
                        )
                        found = max(timed_page(searchers[s], request)[1] for s in settings)  # warm
                        figure = f"{label + suffix} {sort}"
                        note = f"{found} hits, target p95 <= {target:.0f}"
                        for _, setting in ab.rounds(settings, args.runs):
                            ms, _ = timed_page(searchers[setting], request)
                            pages.add(figure, setting, ms, note)
                        p95 = pages.value(figure, settings[0], 0.95)
                        if p95 is not None and p95 > target:
                            misses.append(f"{figure} ({settings[0]})")
            pages.table("first pages, ms", p95=True)
            sessions_total = db.execute(
                "SELECT count(*) FROM sources WHERE subagent = 0"
            ).fetchone()[0]
            walks = ab.Figures(settings)
            for sort in ("relevance", "newest", "oldest"):
                for _, setting in ab.rounds(settings, 1):
                    hits, sessions, seconds = walk(
                        searchers[setting], SearchRequest(query="the", sort=sort)
                    )
                    note = f"{hits} hits in {sessions}/{sessions_total} sessions"
                    walks.add(f"walk of 'the', {sort}", setting, hits / seconds, note)
            walks.table("the complete walk of 'the' (200 a page), hits/s")
    for wing in wings.values():
        wing.close()
    print("misses: " + (", ".join(misses) if misses else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
