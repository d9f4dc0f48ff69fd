#!/usr/bin/env python3
"""No-op re-index benchmark (issue 28: a whole `convodex index` process with nothing
changed <= 100 ms on a 200 MB history): beside the interpreter's own floor.

Prints, in one run, interleaved round by round (so a drift of the machine's load hits
every figure alike), each as a whole process's wall and CPU milliseconds (p50, p95):
`python -c pass` (the floor), `convodex --version` (the CLI's start-up), the no-op
`convodex index --json` (the console script a user runs, not ``python -m``, whose
runpy adds its own imports) over a current catalog of the generated native corpus (its
own seconds from its JSON beside), each with its ratio to the floor; with --base DIR
or REV (an older checkout or a git revision) the same no-op of that tree, and the
speed-up; `uptime` before and after.
Usage: bench/bench_noop.py [--mb 200] [--seed 1] [--corpus DIR] [--runs 15] [--base REV]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import corpus
from baseline import baseline

TARGET_MS = 100.0


def children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """One whole process: its wall and CPU milliseconds and its stdout."""
    import time

    cpu = children_cpu_ms()
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    wall = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"error: {argv[1:]} failed: {done.stderr[-300:]!r}")
    return wall, children_cpu_ms() - cpu, done.stdout


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    corpus.add_arguments(ap)
    ap.add_argument("--runs", type=int, default=15, help="timed rounds (one more warms up)")
    ap.add_argument("--base", help="an older checkout or git revision to compare with")
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores; uptime: {subprocess.getoutput('uptime').strip()}")
    root, _ = corpus.for_bench(args.corpus, "native", args.mb, args.seed)
    # An installed package has its bytecode (round 0 writes it): without, every run
    # would compile what changed since, a cost no user pays.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    trees: dict[str, dict[str, str]] = {"this": env}
    if args.base is not None:
        trees = {"base": {**env, "PYTHONPATH": str(baseline(args.base) / "src")}, **trees}
    py = sys.executable
    script = str(Path(py).parent / "convodex")
    if not os.access(script, os.X_OK):
        raise SystemExit(f"error: no console script at {script} (make .venv/.installed-dev)")
    with tempfile.TemporaryDirectory(prefix="convodex-noop-") as tmp:
        commands: dict[str, tuple[list[str], dict[str, str]]] = {
            "python -c pass": ([py, "-c", "pass"], env),
            "convodex --version": ([script, "--version"], env),
        }
        for tree, tree_env in trees.items():
            cache = Path(tmp) / tree
            argv = [script, "index", "--root", str(root)]
            argv += ["--cache-dir", str(cache), "--json"]
            run(argv, tree_env)  # the first run indexes everything
            commands[f"{tree} no-op index"] = (argv, tree_env)
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        own: dict[str, list[float]] = {}
        sources = 0
        for n in range(args.runs + 1):
            for name, (argv, tree_env) in commands.items():
                ms, cpu_ms, out = run(argv, tree_env)
                if name.endswith("no-op index"):
                    stats = json.loads(out)["stats"]
                    if stats["indexed"] or stats["removed"]:
                        raise SystemExit(f"error: the {name} changed something: {stats}")
                    sources = int(stats["sources"])
                    if n:
                        own.setdefault(name, []).append(stats["seconds"] * 1000)
                if n:
                    wall[name].append(ms)
                    cpu[name].append(cpu_ms)
    floor_wall = statistics.median(wall["python -c pass"])
    floor_cpu = statistics.median(cpu["python -c pass"])
    print(f"\nno-op index of {root} ({sources} sources), {args.runs} interleaved rounds")
    heads = ("wall p50", "p95", "x floor", "cpu p50", "x floor")
    print(f"  {'':24s} " + " ".join(f"{h:>8s}" for h in heads))
    for name in commands:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        line = f"  {name:24s} {w:8.1f} {p95(wall[name]):8.1f} {w / floor_wall:7.2f}x"
        line += f" {c:8.1f} {c / floor_cpu:7.2f}x"
        if name in own:
            line += f"   (the index itself {statistics.median(own[name]):.1f} ms)"
        if name == "this no-op index":
            line += f"   target <= {TARGET_MS:.0f} ms"
        print(line)
    if "base no-op index" in wall:
        then, now = (
            statistics.median(wall["base no-op index"]),
            statistics.median(wall["this no-op index"]),
        )
        print(f"  speed-up over the base: {then / now:.2f}x wall")
    print(f"\nuptime: {subprocess.getoutput('uptime').strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
