#!/usr/bin/env python3
"""Local history search benchmark (issue 2 targets), on the shared corpus generator.

Prints: initial index throughput beside the parse-only floor, catalog size as a share
of the corpus, peak RSS of the indexing process, and warm in-process search latency
(p50/p95) for a rare word, a common word and a CJK query beside `rg -i -l`.
Usage: bench/bench_local.py [--mb 200] [--format native] [--runs 30]
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

HERE = Path(__file__).resolve().parent
MAKE_CORPUS = HERE.parent.parent / "shared" / "bench" / "make_corpus.py"
TARGETS = {
    "index_mb_s": 20.0,
    "catalog_share": 0.35,
    "rss_mb": 300.0,
    "rare_p95_ms": 20.0,
    "common_p95_ms": 150.0,
}


def corpus(mb: float, fmt: str) -> Path:
    """Generate (once) the deterministic corpus into bench/.corpus/."""
    out = HERE / ".corpus" / f"{fmt}-{mb:g}mb"
    stamp = out / ".complete"
    if not stamp.exists():
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run(
            [sys.executable, str(MAKE_CORPUS), str(out), "--mb", str(mb), "--format", fmt],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        stamp.write_text("ok")
    return out


def transcripts(root: Path) -> list[Path]:
    return [
        p
        for p in root.rglob("*.jsonl")
        if not p.name.endswith(
            (".events.jsonl", ".turns.jsonl", ".conflicts.jsonl", ".guardian.jsonl")
        )
    ]


def parse_floor(files: list[Path]) -> tuple[float, int]:
    """Read and JSON-decode every line: the fastest any indexer could go."""
    decode = msgspec.json.decode
    total = 0
    started = time.perf_counter()
    for path in files:
        data = path.read_bytes()
        total += len(data)
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
    ap.add_argument("--mb", type=float, default=200.0)
    ap.add_argument("--format", default="native", choices=["native", "claude-code", "codex"])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()

    root = corpus(args.mb, args.format)
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
                "rare": f"needle{min(1234, len(files) // 2)}",
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
    print(
        f"corpus: {args.format}, {len(files)} transcripts, {corpus_mb:.1f} MB; "
        f"{os.cpu_count()} cores"
    )
    print(
        f"index:  {index_s:.2f} s = {index_mb_s:.1f} MB/s  (target >= 20)  "
        f"| parse floor {floor_mb_s:.0f} MB/s, ratio {index_mb_s / floor_mb_s:.2f}"
    )
    print(
        f"        {summary['stats']['messages']} messages, "  # type: ignore[index]
        f"{summary['stats']['documents']} documents"
    )  # type: ignore[index]
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
