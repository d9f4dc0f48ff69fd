"""Index throughput (MB/s) per source format, beside the parse-only floor.

Each format's corpus comes from the project's generator (corpus.py, cached in
bench/.corpus/) — or, with ``--corpus DIR``, from that directory's format
subdirectories (as ``corpus.py DIR --format all`` lays them out). Each is indexed into
a fresh catalog with the real indexer and compared with the floor: read every file
and JSON-decode it, nothing else.

Usage: python bench/bench_formats.py [--mb 100] [--seed 1] [--corpus DIR]
                                     [--formats native,claude-code,codex,gemini,chatgpt,dag]
Figures on a shared machine are noisy; run twice and keep the better one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus
from bench_local import parse_floor, transcripts
from convodex.catalog.db import open_catalog
from convodex.catalog.indexer import Indexer
from convodex.sources.discover import resolve_root

# The reader that owns each generator format.
READER_OF = {
    "native": "session_log",
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini": "gemini",
    "chatgpt": "chat_export",
    "dag": "dag",
}


def format_root(args: argparse.Namespace, fmt: str) -> Path:
    given: Path | None = args.corpus
    if given is not None:
        return (given / corpus.WRITERS[fmt].subdir).resolve()
    return corpus.cached(fmt, args.mb, args.seed).root(fmt)


def index(root: Path, fmt: str, cache: Path) -> tuple[int, float, int]:
    resolved = resolve_root(f"{root}:{READER_OF[fmt]}")
    with open_catalog(cache) as catalog:
        started = time.perf_counter()
        stats = Indexer(catalog).run([resolved])
        seconds = time.perf_counter() - started
    return stats.bytes_read, seconds, stats.messages


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    corpus.add_arguments(ap, mb=100.0)
    ap.add_argument("--formats", default=",".join(READER_OF))
    args = ap.parse_args()
    print(f"{'format':<12} {'MB':>8} {'index MB/s':>11} {'floor MB/s':>11} {'messages':>10}")
    for fmt in corpus.parse_formats(args.formats):
        root = format_root(args, fmt)
        if not root.is_dir():
            print(f"{fmt:<12} no {root}")
            continue
        work = Path(tempfile.mkdtemp(prefix=f"bench-{fmt}-"))
        try:
            floor_s, size = parse_floor(transcripts(root))
            done, index_s, messages = index(root, fmt, work / "cache")
            mb = size / 1e6
            print(
                f"{fmt:<12} {mb:>8.1f} {done / 1e6 / index_s:>11.1f} "
                f"{mb / floor_s:>11.1f} {messages:>10}",
                flush=True,
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
