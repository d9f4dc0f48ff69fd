#!/usr/bin/env python3
"""Query workflow benchmark (issue 10): first pages and complete walks, in-process.

For a rare word, the common word ``the``, a phrase and a CJK word — each alone, with a
project filter and with a ``since`` filter, in relevance and newest order — prints the
first page's p50/p95 over warm runs (first pages are never served from a kept list),
then pages through every hit of ``the`` in each order and prints hits per second. Each
first page is also measured, alternately in the run, ranked by FTS5 without the word's
band (``bands`` off) and on one connection besides (``split`` off too).
The corpus is generated once into bench/.corpus/ (see corpus.py) unless --corpus is given.
Usage: bench/bench_query.py [--mb 200] [--seed 1] [--corpus DIR] [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import msgspec

import corpus
from convodex.catalog.db import open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.plan import SearchRequest
from convodex.catalog.search import Searcher
from convodex.catalog.speed import bands
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing
from convodex.sources.roots import resolve_root

TARGET_FIRST_PAGE_P95_MS = 30.0
TARGET_COMMON_P95_MS = 60.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def first_pages(searcher: Searcher, request: SearchRequest, runs: int) -> tuple[float, float, int]:
    """p50 and p95 ms of a first page (and its hits), warm, never from a kept list."""
    samples = []
    hits = 0
    for _ in range(runs + 1):
        started = time.perf_counter()
        page = searcher.search(request)
        samples.append((time.perf_counter() - started) * 1000)
        hits = len(page.hits)
    samples = samples[1:]  # the first run warms the page cache
    return statistics.median(samples), percentile(samples, 0.95), hits


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
    ap.add_argument("--runs", type=int, default=20, help="timed runs per query (20)")
    args = ap.parse_args()
    root, manifest = corpus.for_bench(args.corpus, "claude-code", args.mb, args.seed)
    index_root = manifest.root("claude-code") if manifest else root
    rare = manifest.rare_word() if manifest else "needle1"

    with tempfile.TemporaryDirectory(prefix="convodex-bench-query-") as tmp:
        with open_catalog(Path(tmp)) as catalog:
            started = time.perf_counter()
            speed = Wing(Accelerators.from_config())
            stats = Indexer(catalog, speed=speed).run([resolve_root(f"{index_root}:claude-code")])
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
            searcher = Searcher(catalog, speed=speed)
            # The same wing without bands, and without the split besides.
            no_band = Searcher(catalog, speed=speed.using(bands=False))
            one_share = Searcher(catalog, speed=speed.using(bands=False, shares=1))
            queries = {"rare": rare, "common": "the", "phrase": '"return the"', "cjk": "迁移"}
            filters: dict[str, dict[str, object]] = {
                "": {},
                "+project": {"projects": (name,)},
                "+since": {"since": since},
            }
            shares = speed.settings.shares
            banded = ", ".join(sorted(bands.stored(db))) or "none"
            print(f"\nwords with a band (bands.py): {banded}")
            print(
                f"{shares} shares (split.py); no band: ranked by FTS5 on {shares} shares; "
                "one share: and on one connection; measured alternately in this run"
            )
            print(
                f"{'query':<28}{'sort':<11}{'p50 ms':>9}{'p95 ms':>9}{'hits':>6}  target p95"
                f"{'no band p50/p95':>18}{'one share p50/p95':>20}"
            )
            misses = []
            for label, query in queries.items():
                for suffix, extra in filters.items():
                    for sort in ("relevance", "newest"):
                        request = msgspec.structs.replace(
                            SearchRequest(query=query, sort=sort), **extra
                        )
                        one50, one95, _ = first_pages(one_share, request, args.runs)
                        fts50, fts95, _ = first_pages(no_band, request, args.runs)
                        p50, p95, hits = first_pages(searcher, request, args.runs)
                        target = (
                            TARGET_COMMON_P95_MS
                            if label == "common"
                            else (TARGET_FIRST_PAGE_P95_MS)
                        )
                        ok = "ok" if p95 <= target else "MISS"
                        if p95 > target:
                            misses.append(f"{label}{suffix} {sort}")
                        print(
                            f"{label + suffix:<28}{sort:<11}{p50:>9.1f}{p95:>9.1f}{hits:>6}"
                            f"  ≤ {target:.0f} {ok:<4}{fts50:>9.1f} / {fts95:<6.1f}"
                            f"{one50:>11.1f} / {one95:.1f}"
                        )
            sessions_total = db.execute(
                "SELECT count(*) FROM sources WHERE subagent = 0"
            ).fetchone()[0]
            print("\nthe complete walk of 'the' (every kind but tool output, 200 a page):")
            for sort in ("relevance", "newest", "oldest"):
                hits, sessions, seconds = walk(searcher, SearchRequest(query="the", sort=sort))
                print(
                    f"  {sort:<10} {hits:>7} hits in {sessions}/{sessions_total} sessions, "
                    f"{seconds:.2f} s = {hits / seconds:,.0f} hits/s"
                )
    uptime = shutil.which("uptime")
    load = subprocess.run([uptime], capture_output=True, text=True).stdout if uptime else ""
    print(f"\nuptime: {load.strip() or os.getloadavg()}; {os.cpu_count()} cores")
    print("misses: " + (", ".join(misses) if misses else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
