#!/usr/bin/env python3
"""How long quitting takes while a big history indexes (the picker's and serve's close).

Writes a history past the helper process's threshold (Claude Code sessions of plain
prose), then, for each trial, starts background indexing on a fresh catalog, waits a
moment spread over the run (the helper starting, commits, the end of the scan) and
times ``HistoryService.close``: the scheduler's stop at its next batch boundary.
Prints p50/p95/max of the close and ``uptime``. Target: p95 <= 3 s (before: up to
10 s while the helper started, and the listing's whole replay after a scan).
Usage: bench/bench_quit.py [--trials 12] [--sessions 60] [--megabytes 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serve import report
from convodex.catalog.service import Background, HistoryService
from convodex.sources.roots import resolve_root

WORDS = [f"w{n:x}ord" for n in range(4000)]


def write_history(root: Path, sessions: int, megabytes_each: float) -> None:
    draw = random.Random(7)
    folder = root / "work-shop"
    folder.mkdir(parents=True)
    for n in range(sessions):
        session_id = f"b1900000-0000-4000-8000-{n:012d}"
        lines, size, parent, k = [], 0, None, 0
        while size < megabytes_each * 1024 * 1024:
            role = "user" if k % 2 == 0 else "assistant"
            text = " ".join(draw.choices(WORDS, k=400))
            content: object = text if role == "user" else [{"type": "text", "text": text}]
            uuid = f"{session_id}-{k}"
            record = {
                "type": role,
                "uuid": uuid,
                "parentUuid": parent,
                "sessionId": session_id,
                "cwd": "/work/shop",
                "timestamp": f"2026-01-{1 + n % 28:02d}T10:{k % 60:02d}:00.000Z",
                "message": {"role": role, "content": content},
            }
            line = json.dumps(record) + "\n"
            lines.append(line)
            size, parent, k = size + len(line), uuid, k + 1
        (folder / f"{session_id}.jsonl").write_text("".join(lines), "utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--sessions", type=int, default=60)
    ap.add_argument("--megabytes", type=float, default=1.0)
    args = ap.parse_args()
    closes_ms = []
    with tempfile.TemporaryDirectory(prefix="convodex-bench-quit-") as tmp:
        root, cache = Path(tmp) / "claude", Path(tmp) / "cache"
        write_history(root, args.sessions, args.megabytes)
        roots = [resolve_root(f"{root}:claude-code")]
        for trial in range(args.trials):
            shutil.rmtree(cache, ignore_errors=True)
            background = Background(listen_for_hints=False)
            service = HistoryService.open(cache, roots, background=background)
            service.start()
            time.sleep(0.1 + 0.3 * trial)  # a bench may wait: from the helper's start on
            state = service.progress()
            started = time.perf_counter()
            service.close()
            closes_ms.append((time.perf_counter() - started) * 1000)
            print(f"trial {trial}: {state.indexed}/{state.total}, close {closes_ms[-1]:.0f} ms")
    print(report("close while indexing", closes_ms) + "  (target p95 <= 3000 ms)")
    load_avg = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"uptime: {load_avg}; {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
