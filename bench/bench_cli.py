#!/usr/bin/env python3
"""Whole-process CLI latency: `convodex --version` and `convodex search` beside the floor.

A person feels the whole command, start-up included, so this times processes, not
functions: `convodex --version`, and `convodex search` for a rare word, a common
word (`the`), a phrase and a CJK word (`迁移`) over an indexed Claude Code corpus,
each without a service and with one running (`convodex service start`: the warm
path, SPEC L20), beside `python3 -c pass` (the floor; the venv's `python -c pass`
too) and ripgrep (`rg -i -l --hidden`) on the same files. With --base DIR or REV (a
checkout of an older commit, or a git revision such as `HEAD~1`) that tree's
`python -m convodex search` and `--version` run too, beside this tree's. Each line
also gives the process's peak RSS; two lines time the imports alone (the thin
client a short command loads first, and the click CLI). Every command gets one
warm-up run, then ``--runs`` timed runs, interleaved so load drifts hit all of them
alike; each line prints p50 and p95 and how far p50 is from the floor and from
ripgrep.
Targets (issue 28): with a service every search within 25 ms of the floor at p50
and faster than ripgrep; without one, no slower than the base (issue 9: 30 ms).

The corpus is generated once into bench/.corpus/ (see corpus.py) unless --corpus is
given; it is indexed into a temporary cache first.
Usage: bench/bench_cli.py [--mb 200] [--seed 1] [--corpus DIR] [--runs 10] [--rare WORD]
       [--base DIR|REV]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import corpus
from ab import percentile
from baseline import baseline
from procs import peak_rss_kb, timed

TARGET_MS = 30.0
THIN = "convodex.warm.client"
WARM_TARGET_MS = 25.0
RG_INSTALL = "ripgrep (rg) is not installed: apt-get install ripgrep (or brew install ripgrep)"


@dataclass(slots=True)
class Command:
    label: str
    argv: list[str]
    ok: tuple[int, ...] = (0,)
    samples: list[float] | None = None
    rss_kb: list[int] | None = None  # peak RSS of a few untimed runs

    env: dict[str, str] | None = None  # instead of the bench's own

    def run(self, env: dict[str, str]) -> float:
        """Milliseconds for one run, output discarded; a failing command stops the bench."""
        ms, code, _, stderr = timed(self.argv, self.env or env)
        if code not in self.ok:
            err = stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
            raise SystemExit(f"error: {self.label} exited with {code}: {err}")
        return ms

    def measure_rss(self, env: dict[str, str]) -> None:
        """Peak RSS of a few runs apart from the timed ones (GNU time around them)."""
        self.rss_kb = [peak_rss_kb(self.argv, self.env or env) for _ in range(3)]


def tool(name: str, hint: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"error: {hint}")
    return found


def interpreter(python3: str) -> str:
    """The binary behind ``python3``: a version manager's shim (pyenv) is a shell script
    whose own start-up would inflate the floor."""
    done = subprocess.run(
        [python3, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True
    )
    real = done.stdout.strip()
    if done.returncode == 0 and real and Path(real).resolve() != Path(python3).resolve():
        print(f"python3 on PATH ({python3}) runs {real}: timing that as the floor")
        return real
    return python3


def index(convodex: str, root: Path, cache: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [convodex, "index", "--root", str(root), "--cache-dir", str(cache), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"error: convodex index failed: {done.stderr.strip()[-300:]}")
    stats = json.loads(done.stdout)["stats"]
    summary = f"{stats['indexed']} sources, {stats['messages']} messages"
    return time.perf_counter() - started, summary


def counts(convodex: str, rg: str, query: str, root: Path, cache: Path, env: dict[str, str]) -> str:
    """Sessions in convodex's first page, files ripgrep lists: what each run returned."""
    found = subprocess.run(
        [convodex, "search", query, "--cache-dir", str(cache), "--json", "--limit", "200"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    sessions = len({h["sessionId"] for h in json.loads(found.stdout or "{}").get("hits", [])})
    listed = subprocess.run(
        [rg, "-i", "-l", "--hidden", query, str(root)], capture_output=True, text=True, check=False
    )
    return f"{sessions} sessions (first 200 hits) / rg {len(listed.stdout.splitlines())} files"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    corpus.add_arguments(ap)
    ap.add_argument("--runs", type=int, default=10, help="timed runs per command (10)")
    ap.add_argument("--rare", help="the rare word (default: one session's needle)")
    ap.add_argument("--base", help="an older checkout or git revision to compare with (A/B)")
    args = ap.parse_args()
    base = baseline(args.base) if args.base is not None else None

    rg = tool("rg", RG_INSTALL)
    python3 = interpreter(tool("python3", "python3 is not on PATH"))
    convodex = str(Path(sys.executable).with_name("convodex"))
    if not os.access(convodex, os.X_OK):
        raise SystemExit(f"error: no {convodex}: run this with the venv's python (make bench)")
    root, manifest = corpus.for_bench(args.corpus, "claude-code", args.mb, args.seed)
    rare = args.rare or (manifest.rare_word() if manifest else "needle1")
    queries = {"rare": rare, "common": "the", "phrase": '"return self"', "cjk": "迁移"}

    with tempfile.TemporaryDirectory(prefix="convodex-bench-cli-") as tmp:
        cache = Path(tmp) / "cache"
        env = {**os.environ, "CONVODEX_CACHE_HOME": str(cache), "NO_COLOR": "1"}
        env["CONVODEX_HOME"] = str(Path(tmp) / "home")  # no stray default roots
        # Without a service: a runtime directory no service listens in.
        env["XDG_RUNTIME_DIR"] = str(Path(tmp) / "no-service")
        warm = {**env, "XDG_RUNTIME_DIR": str(Path(tmp) / "run")}
        (Path(tmp) / "run").mkdir(mode=0o700)
        # An installed package has its bytecode; the warm-up run writes it here. With
        # PYTHONDONTWRITEBYTECODE (set in some shells and CI) every run would compile
        # the modules changed since the last write instead: 50-80 ms that no user pays.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        index_s, indexed = index(convodex, root, cache, env)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
        print(f"corpus: {root} ({size:.1f} MB); indexed in {index_s:.1f} s: {indexed}")
        py = sys.executable
        commands = [
            Command("python3 -c pass", [python3, "-c", "pass"]),
            Command("venv python -c pass", [py, "-c", "pass"]),
            # What a short command imports before it knows whether a service answers
            # (the console script and the thin client), and what the CLI adds.
            Command("import the thin client", [py, "-c", "import convodex.__main__, " + THIN]),
            Command("import the click CLI", [py, "-c", "import convodex.cli.main"]),
            Command("convodex --version", [convodex, "--version"]),
        ]
        base_env = None
        if base is not None:
            base_env = {**env, "PYTHONPATH": str(base / "src")}
            commands.append(
                Command(
                    "base convodex --version", [py, "-m", "convodex", "--version"], env=base_env
                )
            )
        for name, query in queries.items():
            search = [convodex, "search", query, "--cache-dir", str(cache)]
            commands.append(Command(f"convodex search {name} {query!r}", search))
            commands.append(Command(f"warm search {name} {query!r}", search, env=warm))
            if base_env is not None:
                module = [sys.executable, "-m", "convodex", *search[1:]]
                commands.append(Command(f"this -m search {name}", module))
                commands.append(Command(f"base -m search {name}", module, env=base_env))
            rg_phrase = query.strip('"')
            rg_argv = [rg, "-i", "-l", "--hidden", rg_phrase, str(root)]
            commands.append(Command(f"rg -i -l {name} {rg_phrase!r}", rg_argv, ok=(0, 1)))
        service = [convodex, "service", "start", "--cache-dir", str(cache)]
        subprocess.run(service, env=warm, check=True, stdout=subprocess.DEVNULL)
        try:
            for command in commands:  # warm-up: page cache, catalog, interpreter files
                command.run(env)
                command.samples = []
            for _ in range(args.runs):
                for command in commands:
                    assert command.samples is not None
                    command.samples.append(command.run(env))
            for command in commands:
                command.measure_rss(env)
            served = subprocess.run(
                [convodex, "service", "status", "--cache-dir", str(cache)],
                env=warm,
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
        finally:
            stop = [convodex, "service", "stop", "--cache-dir", str(cache)]
            subprocess.run(stop, env=warm, check=False, stdout=subprocess.DEVNULL)
        report(commands, queries, args.runs, base)
        print(f"service: {served}")
        for name, query in queries.items():
            print(f"  {name} {query!r}: {counts(convodex, rg, query, root, cache, env)}")
    uptime = shutil.which("uptime")
    load = subprocess.run([uptime], capture_output=True, text=True).stdout if uptime else ""
    print(f"uptime: {load.strip() or os.getloadavg()}; {os.cpu_count()} cores")
    return 0


def report(commands: list[Command], queries: dict[str, str], runs: int, base: Path | None) -> None:
    def p50(label: str) -> float:
        found = next(c for c in commands if c.label.startswith(label))
        assert found.samples is not None
        return statistics.median(found.samples)

    floor = p50("python3 -c pass")
    print(f"{runs} warm runs each; floor = python3 -c pass, p50 {floor:.1f} ms")
    header = f"{'command':<34}{'p50 ms':>8}{'p95 ms':>8}{'- floor':>9}{'/ floor':>8}"
    print(f"{header}{'RSS MiB':>8}{'/ rg':>7}")
    for c in commands:
        assert c.samples is not None and c.rss_kb is not None
        median, p95 = statistics.median(c.samples), percentile(c.samples, 0.95)
        line = f"{c.label:<34}{median:>8.1f}{p95:>8.1f}{median - floor:>+9.1f}"
        line += f"{median / floor:>7.2f}x{statistics.median(c.rss_kb) / 1024:>8.1f}"
        if c.label.startswith("convodex search"):
            name = c.label.split()[2]
            line += f"{median / p50(f'rg -i -l {name}'):>6.2f}x"
        elif c.label.startswith("warm search"):
            name = c.label.split()[2]
            line += f"{median / p50(f'rg -i -l {name}'):>6.2f}x"
            line += f"  ({p50(f'convodex search {name}') / median:.1f}x faster than without)"
        elif c.label.startswith("this -m search"):
            name = c.label.split()[3]
            line += f"  ({p50(f'base -m search {name}') / median:.2f}x the base)"
        elif c.label == "convodex --version" and base is not None:
            line += f"  ({p50('base convodex --version') / median:.2f}x the base)"
        print(line)
    misses = [name for name in queries if p50(f"convodex search {name}") - floor > TARGET_MS]
    verdict = "met" if not misses else f"missed by: {', '.join(misses)}"
    print(f"target without a service: p50 within {TARGET_MS:.0f} ms of the floor: {verdict}")
    misses = [
        name
        for name in queries
        if p50(f"warm search {name}") - floor > WARM_TARGET_MS
        or p50(f"warm search {name}") >= p50(f"rg -i -l {name}")
    ]
    verdict = "met" if not misses else f"missed by: {', '.join(misses)}"
    print(
        f"target with a service: p50 within {WARM_TARGET_MS:.0f} ms of the floor and "
        f"below ripgrep's: {verdict}"
    )


if __name__ == "__main__":
    sys.exit(main())
