#!/usr/bin/env python3
"""Live service benchmark (issue 5): HTTP search latency and write-to-searchable latency.

Starts a real `convodex serve` on a loopback port over a generated 200 MB corpus and
measures, with 20 concurrent clients and a query mix, search latency p50/p95 while
the server's first full index (a full rebuild) runs and again once it is idle; and
the time from a session write to the message being searchable, in both states.
The corpus is generated once into bench/.corpus/ (see corpus.py) unless --corpus is given.
Each figure is measured with the accelerators on and off (``--accelerators``), one
whole serve run after the other (``--rounds`` of each, interleaved), with the ratio
off/on (``ab.py``).
Usage: bench/bench_serve.py [--mb 200] [--seed 1] [--corpus DIR] [--clients 20] [--requests 600]
       [--accelerators on,off] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ab
import corpus
from ab import percentile
from bench_local import transcripts
from convodex import config
from convodex.writer import SessionWriter

THROUGHPUT: list[float] = []  # requests per second of each load run, in order
QUERIES = [
    "needle{n}",
    "the",
    "database",
    "迁移",
    "return self",
    "error status",
    "数据库迁移",
    "permission denied",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def load(base: str, clients: int, requests: int, sessions: int) -> list[float]:
    """``requests`` searches from ``clients`` concurrent clients; latencies in ms."""
    latencies: list[float] = []
    counter = iter(range(requests))

    async def client_loop(client: httpx.AsyncClient) -> None:
        for i in counter:
            query = QUERIES[i % len(QUERIES)].format(n=(i * 7919) % max(sessions, 1))
            started = time.perf_counter()
            response = await client.get("/search", params={"q": query, "limit": 20})
            response.raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)

    limits = httpx.Limits(max_connections=clients)
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
    THROUGHPUT.append(requests / (time.perf_counter() - started))
    return latencies


def write_latency(base: str, writer: SessionWriter, session: str, samples: int) -> list[float]:
    """Seconds from an append through the session writer to a hit in /search."""
    delays = []
    with httpx.Client(base_url=base, timeout=30) as client:
        for i in range(samples):
            word = f"freshword{os.getpid()}x{i}x{time.monotonic_ns()}"
            started = time.perf_counter()
            writer.append(session, [{"role": "user", "content": f"just wrote {word}"}])
            while not client.get("/search", params={"q": word}).json()["hits"]:
                if time.perf_counter() - started > 30:
                    break
                time.sleep(0.01)
            delays.append(time.perf_counter() - started)
            time.sleep(0.05)
    return delays


def get_latency(base: str, path: str, samples: int) -> list[float]:
    """Milliseconds of ``samples`` GETs of ``path``, one after another."""
    out = []
    for _ in range(samples):
        started = time.perf_counter()
        httpx.get(base + path, timeout=30).raise_for_status()
        out.append((time.perf_counter() - started) * 1000)
    return out


def status(base: str) -> dict[str, object]:
    return httpx.get(base + "/status", timeout=30).json()  # type: ignore[no-any-return]


def report(name: str, latencies: list[float], unit: str = "ms") -> str:
    """One latency line (p50, p95, n), as other benches print theirs too."""
    return (
        f"{name}: p50 {statistics.median(latencies):7.1f} {unit}  "
        f"p95 {percentile(latencies, 0.95):7.1f} {unit}  (n={len(latencies)})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    corpus.add_arguments(ap)
    ab.add_argument(ap)
    ap.add_argument("--rounds", type=int, default=1, help="serve runs per setting (1)")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--writes", type=int, default=20)
    ap.add_argument(
        "--search-workers",
        type=int,
        action="append",
        help="serve with this many search processes (repeat to compare in one run; "
        "default: the serve default, one per core)",
    )
    args = ap.parse_args()
    settings: tuple[str, ...] = args.accelerators
    root, manifest = corpus.for_bench(args.corpus, "native", args.mb, args.seed)
    sessions = len(manifest.main_sessions()) if manifest else len(transcripts(root))
    corpus_mb = sum(p.stat().st_size for p in transcripts(root)) / 1e6
    print(
        f"corpus: {root}, {sessions} sessions, {corpus_mb:.1f} MB; {args.clients} concurrent "
        f"clients; query mix of {len(QUERIES)} (rare, common, phrase, CJK); uptime {ab.uptime()}"
    )
    for workers in args.search_workers or [None]:
        label = "default (one per core)" if workers is None else str(workers)
        latency, rates = ab.Figures(settings), ab.Figures(settings)
        for _, setting in ab.rounds(settings, args.rounds):
            serve_once(args, root, sessions, workers, setting, (latency, rates))
        latency.table(f"search workers {label}: latency, ms", p95=True)
        rates.table(f"search workers {label}: rates")
    return 0


def serve_once(
    args: argparse.Namespace,
    root: Path,
    sessions: int,
    workers: int | None,
    setting: str,
    figures: tuple[ab.Figures, ab.Figures],
) -> None:
    """One `convodex serve` from an empty cache with the accelerators ``setting``: loads
    during its rebuild, then idle; its latencies and rates go into ``figures``."""
    THROUGHPUT.clear()
    writes_root = Path(tempfile.mkdtemp(prefix="convodex-bench-writes-"))
    writer_seed = SessionWriter(writes_root)
    writer_seed.append("live", [{"role": "user", "content": "a live session"}])
    extra = [] if workers is None else ["--search-workers", str(workers)]
    with tempfile.TemporaryDirectory(prefix="convodex-bench-serve-") as cache:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        argv = [sys.executable, "-m", "convodex", "serve", "--port", str(port)]
        argv += ["--root", str(writes_root), "--root", str(root), "--cache-dir", cache, *extra]
        server = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ab.env(setting)
        )
        try:
            started = time.perf_counter()
            while True:
                try:
                    status(base)
                    break
                except httpx.HTTPError:
                    time.sleep(0.05)
            writer = SessionWriter(writes_root, channel=config.hint_socket_path(cache))
            while status(base)["indexed"] == 0:
                time.sleep(0.05)
            before = status(base)
            # The progressive tree answers from what is known, reading no transcript:
            # beside /status (the floor of a request) while the rebuild runs.
            tree_busy = get_latency(base, "/tree?progressive=1", 20)
            status_busy = get_latency(base, "/status", 20)
            busy = asyncio.run(load(base, args.clients, args.requests, sessions))
            busy_writes = write_latency(base, writer, "live", args.writes)
            during = status(base)
            while status(base)["state"] != "complete":
                time.sleep(0.2)
            index_s = time.perf_counter() - started
            idle = asyncio.run(load(base, args.clients, args.requests, sessions))
            idle_writes = write_latency(base, writer, "live", args.writes)
            single = asyncio.run(load(base, 1, max(args.requests // 4, 50), sessions))
        finally:
            server.terminate()
            server.wait(30)
    print(
        f"  {setting}: the rebuild had {before['indexed']} sources in at the start of the"
        f" loads, {during['indexed']} after the writes, of {during['total']}; full index"
        f" {index_s:.1f} s; uptime {ab.uptime()}"
    )
    latency, rates = figures
    write_target = "target p95 <= 1000 ms"
    for name, samples, note in (
        ("rebuild: progressive /tree", tree_busy, ""),
        ("rebuild: /status (the floor)", status_busy, ""),
        ("rebuild: HTTP search", busy, ""),
        ("rebuild: write→searchable", [d * 1000 for d in busy_writes], write_target),
        ("idle: HTTP search", idle, "target p95 <= 400 ms"),
        ("idle: one client in sequence", single, ""),
        ("idle: write→searchable", [d * 1000 for d in idle_writes], write_target),
    ):
        for sample in samples:
            latency.add(name, setting, sample, note)
    rates.add("full index inside serve, s", setting, index_s)
    rates.add("rebuild: search req/s", setting, THROUGHPUT[0])
    rates.add("idle: search req/s", setting, THROUGHPUT[1], "target >= 100")
    rates.add("idle: one client req/s", setting, THROUGHPUT[2])
    ratio = THROUGHPUT[1] / THROUGHPUT[2]
    rates.add("idle: concurrent / one client, x", setting, ratio, "target >= 2x")


if __name__ == "__main__":
    sys.exit(main())
