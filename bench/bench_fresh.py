#!/usr/bin/env python3
"""What "fresh by default" costs a CLI search (SPEC L17): the freshness check's time.

Over an indexed Claude Code corpus (generated once into bench/.corpus/, see
corpus.py), this times, interleaved so load drifts hit all alike:
- the check alone, in process (``HistoryService.refresh``) on a catalog nothing
  changed under: a stat per known source and per directory, nothing read;
- whole ``convodex search`` processes for a rare word with ``--no-refresh`` (the
  baseline) and with the check (the default), and their ratio;
- a search after one session was appended to and one new session written (the check
  brings both in before answering).
Prints p50/p95 per line, the sources and directories checked, and ``uptime``.
Usage: bench/bench_fresh.py [--mb 200] [--seed 1] [--corpus DIR] [--runs 10]
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
from pathlib import Path

import corpus
from ab import percentile


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise SystemExit(f"error: {argv[1:3]} exited {done.returncode}: {done.stderr[-300:]!r}")
    return (time.perf_counter() - started) * 1000


def line(label: str, samples: list[float], base: float | None = None) -> str:
    p50 = statistics.median(samples)
    text = f"{label:<44}{p50:>9.2f}{percentile(samples, 0.95):>9.2f}"
    return text + (f"{p50 / base:>8.2f}x" if base else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    corpus.add_arguments(ap)
    ap.add_argument("--runs", type=int, default=10, help="timed runs per measurement (10)")
    args = ap.parse_args()
    convodex = str(Path(sys.executable).with_name("convodex"))
    if not os.access(convodex, os.X_OK):
        raise SystemExit(f"error: no {convodex}: run this with the venv's python (make bench)")
    source_root, manifest = corpus.for_bench(args.corpus, "claude-code", args.mb, args.seed)
    rare = manifest.rare_word() if manifest else "needle1"

    from convodex.catalog.service import HistoryService

    with tempfile.TemporaryDirectory(prefix="convodex-bench-fresh-") as tmp:
        # A copy: the bench appends to a session and writes a new one.
        root = Path(tmp) / "corpus"
        shutil.copytree(source_root, root, symlinks=True)
        cache = Path(tmp) / "cache"
        env = {**os.environ, "CONVODEX_CACHE_HOME": str(cache), "NO_COLOR": "1"}
        env["CONVODEX_HOME"] = str(Path(tmp) / "home")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        roots = [str(p) for p in sorted(root.rglob("projects")) if p.is_dir()] or [str(root)]
        index = [convodex, "index", "--cache-dir", str(cache)]
        for r in roots:
            index += ["--root", f"{r}:claude-code"]
        started = time.perf_counter()
        subprocess.run(index, env=env, check=True, stdout=subprocess.DEVNULL)
        files = [p for p in root.rglob("*.jsonl") if p.is_file()]
        size = sum(p.stat().st_size for p in files) / 1e6
        print(
            f"corpus: {len(files)} transcripts, {size:.1f} MB; "
            f"indexed in {time.perf_counter() - started:.1f} s"
        )

        check: list[float] = []
        service = HistoryService.open(cache, [])
        try:
            result = service.refresh(60.0)
            print(f"check: {result.checked} known sources; {result.stale} stale (expect 0)")
            search = [convodex, "search", rare, "--cache-dir", str(cache)]
            plain: list[float] = []
            fresh: list[float] = []
            timed([*search, "--no-refresh"], env)  # warm-up
            timed(search, env)
            for _ in range(args.runs):
                began = time.perf_counter()
                service.refresh(60.0)
                check.append((time.perf_counter() - began) * 1000)
                plain.append(timed([*search, "--no-refresh"], env))
                fresh.append(timed(search, env))
        finally:
            service.close()
        changed: list[float] = []
        for n in range(max(3, args.runs // 3)):
            victim = files[n]
            with open(victim, "a", encoding="utf-8") as handle:
                handle.write(victim.read_text("utf-8").splitlines()[-1] + "\n")
            shutil.copy(files[-1 - n], files[-1 - n].with_name(f"bench-new-{n}.jsonl"))
            changed.append(timed(search, env))
    print(f"{args.runs} runs each{'':<22}{'p50 ms':>9}{'p95 ms':>9}{'ratio':>9}")
    print(line("the check alone, nothing changed (in process)", check))
    print(line("convodex search --no-refresh (baseline)", plain))
    print(line("convodex search (with the check)", fresh, statistics.median(plain)))
    print(line("convodex search after 1 append + 1 new file", changed, statistics.median(plain)))
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"uptime: {load or os.getloadavg()}; {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
