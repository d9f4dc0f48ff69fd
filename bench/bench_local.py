#!/usr/bin/env python3
"""Local history search benchmark (issue 2 targets), on the project's corpus generator.

Prints: initial index throughput beside the parse-only floor, catalog size as a share
of the corpus, peak RSS of the indexing process, and warm in-process search latency
(p50/p95) for a rare word, a common word and a CJK query beside `rg -i -l`.
The corpus is generated once into bench/.corpus/ (see corpus.py) unless --corpus is given.
Usage: bench/bench_local.py [--mb 200] [--seed 1] [--format native] [--corpus DIR] [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

import corpus

TARGETS = {
    "index_mb_s": 20.0,
    "catalog_share": 0.35,
    "rss_mb": 300.0,
    "rare_p95_ms": 20.0,
    "common_p95_ms": 150.0,
}


COMPANIONS = (".events.jsonl", ".turns.jsonl", ".conflicts.jsonl", ".guardian.jsonl")


def transcripts(root: Path) -> list[Path]:
    """Every transcript file: JSONL logs and JSON chats/exports, without sidecars."""
    return sorted(
        p
        for p in root.rglob("*.json*")
        if p.name.endswith((".jsonl", ".json")) and not p.name.endswith((*COMPANIONS, ".meta.json"))
    )


def parse_floor(files: list[Path]) -> tuple[float, int]:
    """Read and JSON-decode every line (a whole .json file at once): the fastest any
    indexer could go."""
    decode = msgspec.json.decode
    total = 0
    started = time.perf_counter()
    for path in files:
        data = path.read_bytes()
        total += len(data)
        if path.name.endswith(".json"):
            decode(data)
            continue
        for line in data.splitlines():
            if line:
                decode(line)
    return time.perf_counter() - started, total


def index(root: Path, cache: Path) -> tuple[float, dict[str, object], float]:
    """A real `convodex index` process; returns seconds, its JSON and peak RSS (MB)."""
    started = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "convodex",
            "index",
            "--root",
            str(root),
            "--cache-dir",
            str(cache),
            "--json",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return seconds, json.loads(proc.stdout), rss_mb


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    corpus.add_arguments(ap)
    ap.add_argument("--format", default="native", choices=[*corpus.WRITERS, "all"])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()

    root, manifest = corpus.for_bench(args.corpus, args.format, args.mb, args.seed)
    files = transcripts(root)
    for path in files:  # warm the page cache: every figure below reads warm files
        path.read_bytes()
    floor_s, corpus_bytes = parse_floor(files)
    corpus_mb = corpus_bytes / 1e6
    with tempfile.TemporaryDirectory(prefix="convodex-bench-") as tmp:
        cache = Path(tmp)
        index_s, summary, rss_mb = index(root, cache)
        db_file = cache / "history-search" / "v1.sqlite"
        from convodex.catalog.db import open_catalog
        from convodex.catalog.search import Searcher

        with open_catalog(cache) as catalog:
            catalog.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db_bytes = sum(p.stat().st_size for p in db_file.parent.iterdir())
            searcher = Searcher(catalog)
            queries = {
                "rare": manifest.rare_word() if manifest else "needle1",
                "common": "the",
                "cjk": "迁移",
            }
            latency: dict[str, list[float]] = {}
            counts: dict[str, int] = {}
            for name, query in queries.items():
                searcher.search(query)  # warm
                runs = []
                for _ in range(args.runs):
                    t = time.perf_counter()
                    result = searcher.search(query)
                    runs.append((time.perf_counter() - t) * 1000)
                latency[name] = runs
                counts[name] = len(result["hits"])
        rg = shutil.which("rg")
        rg_ms: dict[str, float] = {}
        if rg:
            for name, query in queries.items():
                runs = []
                for _ in range(5):
                    t = time.perf_counter()
                    subprocess.run(
                        [rg, "-i", "-l", "--hidden", query, str(root)],
                        stdout=subprocess.DEVNULL,
                        check=False,
                    )
                    runs.append((time.perf_counter() - t) * 1000)
                rg_ms[name] = statistics.median(runs)

    index_mb_s = corpus_mb / index_s
    floor_mb_s = corpus_mb / floor_s
    kind = args.format if manifest else "given"
    print(f"corpus: {kind} {root}, {len(files)} transcripts, {corpus_mb:.1f} MB; ", end="")
    print(f"{os.cpu_count()} cores; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"index:  {index_s:.2f} s = {index_mb_s:.1f} MB/s  (target >= 20)  "
        f"| parse floor {floor_mb_s:.0f} MB/s, ratio {index_mb_s / floor_mb_s:.2f}"
    )
    stats: dict[str, int] = summary["stats"]  # type: ignore[assignment]
    print(f"        {stats['messages']} messages, {stats['documents']} documents")
    print(
        f"catalog: {db_bytes / 1e6:.1f} MB = {100 * db_bytes / corpus_bytes:.1f}% of the corpus"
        f"  (target <= 35%)"
    )
    print(f"peak RSS of `convodex index`: {rss_mb:.0f} MB  (target <= 300)")
    for name in ("rare", "common", "cjk"):
        p50, p95 = percentile(latency[name], 0.5), percentile(latency[name], 0.95)
        line = (
            f"search {name:<6} {queries[name]!r:>13}: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms"
            f"  ({counts[name]} hits)"
        )
        if name in rg_ms:
            line += f"  | rg -i -l {rg_ms[name]:6.1f} ms, ratio {rg_ms[name] / p95:5.1f}x"
        print(line)
    if not rg:
        print("rg not found: install ripgrep to compare")
    print("targets: rare p95 <= 20 ms, common p95 <= 150 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
