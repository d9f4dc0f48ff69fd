#!/usr/bin/env python3
"""How soon an append is searchable in `convodex serve` when its writer sends the hint.

Starts a real `convodex serve` (rescans an hour apart, so only the hint or the file
watcher can bring an append in) over a small root, then appends through a
``SessionWriter`` that hints over the local socket, and, as the baseline in the same
run, through one that does not (the file watcher finds those). Prints p50/p95 of
write→searchable for both, their ratio, and ``uptime``. Target: hinted p95 <= 1 s.
Usage: bench/bench_writer_hint.py [--writes 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serve import free_port, report, status, write_latency
from convodex import config
from convodex.writer import SessionWriter


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="convodex-bench-hint-") as tmp:
        root, cache = Path(tmp) / "sessions", Path(tmp) / "cache"
        SessionWriter(root).append("live", [{"role": "user", "content": "a live session"}])
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "-m", "convodex", "serve", "--port", str(port), "--rescan", "3600"]
            + ["--root", str(root), "--cache-dir", str(cache)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while True:
                try:
                    if status(base)["state"] == "complete":
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
            hinted = SessionWriter(root, channel=config.hint_socket_path(cache))
            hinted_s = write_latency(base, hinted, "live", args.writes)
            watched_s = write_latency(base, SessionWriter(root), "live", args.writes)
        finally:
            server.terminate()
            server.wait(30)
    hinted_ms = [d * 1000 for d in hinted_s]
    watched_ms = [d * 1000 for d in watched_s]
    ratio = statistics.median(watched_ms) / max(statistics.median(hinted_ms), 1e-9)
    print(report("write→searchable, hinted", hinted_ms) + "  (target p95 <= 1000 ms)")
    print(report("write→searchable, watcher only (baseline)", watched_ms))
    print(f"baseline / hinted (p50): {ratio:.1f}x")
    load_avg = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"uptime: {load_avg}; {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
