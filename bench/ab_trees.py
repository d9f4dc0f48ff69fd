#!/usr/bin/env python3
"""Two trees' figures in one interleaved run (issue 23: "within noise of before"): a bench
script of a base revision and the same script of this tree, run alternately (base, this,
base, this …) on the same corpus, each in its own process with ``PYTHONPATH`` on its
tree's ``src``, so a drift of the machine's load hits both. The base runs its own copy
of the script (``git archive`` of its ``src`` and ``bench``): the library calls a bench
makes changed with the code it measures. Every output is printed whole, with the load
before and after each run, and kept in ``--out`` when given.

Usage: bench/ab_trees.py --base REV [--rounds 2] [--out DIR] [--this-args "..."]
       [--base-args "..."] SCRIPT [ARGS...]
  e.g. bench/ab_trees.py --base 478aef3 --this-args "--accelerators on" \
       bench_query.py --corpus /tmp/c200/.claude/projects --runs 10
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from baseline import baseline

HERE = Path(__file__).resolve().parent.parent


def uptime() -> str:
    return subprocess.getoutput("uptime").strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--base", required=True, help="a git revision or an older checkout")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each tree (2)")
    ap.add_argument("--out", type=Path, help="keep each run's output in this directory")
    ap.add_argument("--this-args", default="", help="arguments for this tree's run only")
    ap.add_argument("--base-args", default="", help="arguments for the base's run only")
    ap.add_argument("script", help="a bench script's name, e.g. bench_query.py")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="arguments for both trees")
    args = ap.parse_args()
    trees = {"base": baseline(args.base, parts=("src", "bench")), "this": HERE}
    for name, tree in trees.items():
        if not (tree / "bench" / args.script).is_file():
            raise SystemExit(f"error: {name} tree {tree} has no bench/{args.script}")
    extra = {"base": shlex.split(args.base_args), "this": shlex.split(args.this_args)}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    print(f"{args.script} {' '.join(args.args)}: base = {trees['base']}, this = {HERE}")
    for n in range(args.rounds):
        for name, tree in trees.items():
            command = [sys.executable, str(tree / "bench" / args.script), *args.args]
            command += extra[name]
            env = {**os.environ, "PYTHONPATH": str(tree / "src")}
            before = uptime()
            started = time.perf_counter()
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - started
            text = done.stdout + (f"\n[stderr]\n{done.stderr}" if done.returncode else "")
            head = (
                f"== round {n + 1} {name} (rc {done.returncode}, {seconds:.0f} s)\n"
                f"  before: {before}\n  after:  {uptime()}"
            )
            print(f"{head}\n{text}", flush=True)
            if args.out:
                (args.out / f"{n + 1}-{name}.txt").write_text(f"{head}\n{text}", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
