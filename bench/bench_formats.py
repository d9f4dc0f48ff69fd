"""Index throughput (MB/s) per source format, beside the parse-only floor.

Generates a corpus per format with ``../shared/bench/make_corpus.py`` (native,
claude-code, codex), indexes it into a fresh catalog with the real indexer, and
compares with the floor: read every line and JSON-decode it, nothing else.

Usage: python bench/bench_formats.py [--mb 100] [--formats native,claude-code,codex]
Figures on a shared machine are noisy; run twice and keep the better one.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from convodex.catalog.db import open_catalog
from convodex.catalog.indexer import Indexer

MAKE_CORPUS = (Path(__file__).parents[1] / ".." / "shared" / "bench" / "make_corpus.py").resolve()
ROOT_OF = {"native": ".", "claude-code": ".claude/projects", "codex": ".codex/sessions"}
FORMAT_OF = {"native": "session_log", "claude-code": "claude_code", "codex": "codex"}


def corpus(out: Path, fmt: str, mb: float) -> Path:
    subprocess.run(
        [sys.executable, str(MAKE_CORPUS), str(out), "--mb", str(mb), "--format", fmt],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return (out / ROOT_OF[fmt]).resolve()


def floor(root: Path) -> tuple[int, float]:
    """Bytes and seconds to read and JSON-decode every line of every transcript."""
    decode = msgspec.json.Decoder().decode
    total = 0
    started = time.perf_counter()
    for path in root.rglob("*.jsonl"):
        with open(path, "rb") as handle:
            for line in handle:
                total += len(line)
                if line.strip():
                    decode(line)
    return total, time.perf_counter() - started


def index(root: Path, fmt: str, cache: Path) -> tuple[int, float, int]:
    spec = Path(f"{root}:{FORMAT_OF[fmt]}")
    from convodex.sources.discover import resolve_root

    resolved = resolve_root(spec)
    with open_catalog(cache) as catalog:
        started = time.perf_counter()
        stats = Indexer(catalog).run([resolved])
        seconds = time.perf_counter() - started
    return stats.bytes_read, seconds, stats.messages


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--formats", default="native,claude-code,codex")
    args = ap.parse_args()
    print(f"{'format':<12} {'MB':>8} {'index MB/s':>11} {'floor MB/s':>11} {'messages':>10}")
    for fmt in args.formats.split(","):
        work = Path(tempfile.mkdtemp(prefix=f"bench-{fmt}-"))
        try:
            root = corpus(work / "corpus", fmt, args.mb)
            size, floor_s = floor(root)
            done, index_s, messages = index(root, fmt, work / "cache")
            mb = size / 1e6
            print(
                f"{fmt:<12} {mb:>8.1f} {done / 1e6 / index_s:>11.1f} "
                f"{mb / floor_s:>11.1f} {messages:>10}",
                flush=True,
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
