#!/usr/bin/env python3
"""Picker start-up: from launching `convodex pick QUERY` to its first results on screen.

SPEC L16 / issue 11 target: the first results within 300 ms of launch on the 200 MB
corpus. The picker runs in a real terminal (a private tmux server); the clock starts
when tmux is asked to start it, and the pane is captured every 2 ms (through one tmux
control-mode client, so the polling itself takes little CPU) until:

- *paint*: the picker's search box is on screen (its top border);
- *results*: the results are on screen: the status line's `N hits in M sessions` and a
  result row (`#N kind:`) both show (the figure the target is about);
- *ready*: the Textual app has taken over and reads keys (its footer, `esc Quit`).

Beside it, the same terminal's floor: `python -c print` until its line shows. Queries:
a rare word (one session's needle) and a common one (`the`). One warm-up run each,
then ``--runs`` timed runs, interleaved. ``--baseline SRC`` times another version too,
interleaved with this one (so both see the same load) and prints the ratios: SRC is a
directory holding that version's ``convodex`` package, e.g. made with
``git archive main src | tar -x -C /tmp/main`` and given as ``/tmp/main/src``.

The corpus is generated once into bench/.corpus/ (see corpus.py) unless --corpus is
given; it is indexed into a temporary cache first. The package's bytecode is cached
first too, as an installed package has it (pip compiles it on install): with
PYTHONDONTWRITEBYTECODE set, every launch would otherwise compile every module.
Background indexing is off (`--no-index`): the catalog is complete, and the figure is
the picker's own.
Usage: bench/bench_pick.py [--mb 200] [--seed 1] [--corpus DIR] [--runs 10] [--baseline SRC]
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import corpus
from ab import percentile
from bench_cli import index

TARGET_MS = 300.0
TIMEOUT_S = 30.0
POLL_S = 0.002


PAINTED = "▔▔▔▔"  # the search box's top border
RESULT_ROW = re.compile(r"#\d+ (user_text|assistant_text|tool_input|tool_output|tool_error)")
READY = "esc Quit"  # Textual's footer: the app has the terminal


def has_results(screen: str) -> bool:
    return "hits in " in screen and RESULT_ROW.search(screen) is not None


class Terminal:
    """A private tmux server, and one control-mode client that captures panes: a capture
    is a line on a pipe, not a new tmux process, so polling every few milliseconds
    takes little CPU from the picker being timed."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.runs = 0
        # A session that keeps the server up (every run starts in a running server)
        # and that the control client attaches to.
        self.tmux("new-session", "-d", "-s", "keep", "-x", "160", "-y", "40", "sleep 3600")
        self.control = subprocess.Popen(
            ["tmux", "-L", socket, "-C", "attach", "-t", "keep"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._reply()  # the answer to attaching

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True)
        return done.stdout

    def _reply(self) -> str:
        """The next command's output: the lines between ``%begin`` and ``%end``."""
        assert self.control.stdout is not None
        lines: list[str] = []
        inside = False
        while line := self.control.stdout.readline():
            if line.startswith("%begin"):
                inside = True
            elif inside and line.startswith(("%end", "%error")):
                return "".join(lines)
            elif inside:
                lines.append(line)
        raise SystemExit("error: the tmux control client ended")

    def capture(self, name: str) -> str:
        assert self.control.stdin is not None
        self.control.stdin.write(f"capture-pane -p -t {name}\n")
        self.control.stdin.flush()
        return self._reply()

    def close(self) -> None:
        if self.control.stdin is not None:
            self.control.stdin.close()
        self.tmux("kill-server")
        self.control.wait(10)

    def time_until(
        self, command: str, done: Callable[[str], bool], *early: Callable[[str], bool]
    ) -> list[float]:
        """Milliseconds from launch until each of ``early`` and then ``done`` first hold."""
        self.runs += 1
        name = f"run{self.runs}"
        checks = [*early, done]
        seen: list[float | None] = [None] * len(checks)
        started = time.perf_counter()
        self.tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "40", command)
        try:
            while True:
                screen = self.capture(name)
                now = (time.perf_counter() - started) * 1000
                for n, check in enumerate(checks):
                    if seen[n] is None and check(screen):
                        seen[n] = now
                if seen[-1] is not None:
                    return [now if s is None else s for s in seen]
                if now > TIMEOUT_S * 1000:
                    raise SystemExit(f"error: the picker never got ready; screen:\n{screen}")
                time.sleep(POLL_S)
        finally:
            self.tmux("kill-session", "-t", name)


def package_dir() -> Path:
    """The directory of the convodex package this Python imports."""
    spec = importlib.util.find_spec("convodex")
    if spec is None or spec.origin is None:
        raise SystemExit("error: convodex is not importable: run this with the venv's python")
    return Path(spec.origin).parent


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    corpus.add_arguments(ap)
    ap.add_argument("--runs", type=int, default=10, help="timed runs per command (10)")
    ap.add_argument("--baseline", type=Path, help="another version's src directory to compare")
    args = ap.parse_args()
    if args.baseline is not None and not (args.baseline / "convodex" / "__init__.py").is_file():
        raise SystemExit(f"error: --baseline {args.baseline} holds no convodex package")
    if shutil.which("tmux") is None:
        raise SystemExit("error: tmux is not installed: apt-get install tmux")
    convodex = str(Path(sys.executable).with_name("convodex"))
    if not os.access(convodex, os.X_OK):
        raise SystemExit(f"error: no {convodex}: run this with the venv's python (make bench)")
    packages = [package_dir()]
    if args.baseline is not None:
        packages.append(args.baseline / "convodex")
    for package in packages:
        compileall.compile_dir(str(package), quiet=1)
        print(f"bytecode cached for {package}")
    root, manifest = corpus.for_bench(args.corpus, "claude-code", args.mb, args.seed)
    rare = manifest.rare_word() if manifest else "needle1"

    with tempfile.TemporaryDirectory(prefix="convodex-bench-pick-") as tmp:
        cache = Path(tmp) / "cache"
        env = {**os.environ, "CONVODEX_CACHE_HOME": str(cache), "CONVODEX_HOME": f"{tmp}/home"}
        index_s, indexed = index(convodex, root, cache, env)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
        print(f"corpus: {root} ({size:.1f} MB); indexed in {index_s:.1f} s: {indexed}")
        prefix = " ".join(
            [
                "env",
                *(shlex.quote(f"{k}={env[k]}") for k in ("CONVODEX_CACHE_HOME", "CONVODEX_HOME")),
            ]
        )
        floor = f"{prefix} {shlex.quote(sys.executable)} -c 'print(\"floor-ok\")'; sleep 30"
        versions = {"": prefix}
        if args.baseline is not None:
            # Its own catalog, indexed by itself: a build of another schema opens ours
            # read-only (degraded), which is not what its users see.
            source = str(args.baseline.resolve())
            base_cache = Path(tmp) / "baseline-cache"
            base_env = {**env, "CONVODEX_CACHE_HOME": str(base_cache), "PYTHONPATH": source}
            index(convodex, root, base_cache, base_env)
            versions["baseline "] = " ".join(
                [
                    "env",
                    *(
                        shlex.quote(f"{k}={base_env[k]}")
                        for k in ("CONVODEX_CACHE_HOME", "CONVODEX_HOME")
                    ),
                    shlex.quote(f"PYTHONPATH={source}"),
                ]
            )
        picks = {
            f"{version}pick {name} {query!r}": f"{env_prefix} {shlex.quote(convodex)} pick "
            f"{shlex.quote(query)} --no-index; sleep 30"
            for name, query in (("rare", rare), ("common", "the"))
            for version, env_prefix in versions.items()
        }
        terminal = Terminal(f"convodex-bench-{os.getpid()}")
        floors: list[float] = []
        samples: dict[str, list[list[float]]] = {label: [] for label in picks}

        def painted(screen: str) -> bool:
            return PAINTED in screen

        def ready(screen: str) -> bool:
            return READY in screen

        try:
            for run in range(args.runs + 1):  # the first round warms up
                shown = terminal.time_until(floor, lambda screen: "floor-ok" in screen)
                if run:
                    floors.append(shown[0])
                for label, command in picks.items():
                    times = terminal.time_until(command, ready, painted, has_results)
                    if run:
                        samples[label].append(times)
        finally:
            terminal.close()
    floor_p50 = statistics.median(floors)
    print(
        f"{args.runs} runs each in a tmux terminal; floor (python -c print) p50 {floor_p50:.0f} ms"
    )
    print(f"{'command':<37}{'paint':>8}{'results p50':>13}{'p95':>7}{'- floor':>9}{'ready':>8}")
    worst = 0.0
    medians: dict[str, tuple[float, float]] = {}
    for label, got in samples.items():
        results = [r for _, r, _ in got]
        median = statistics.median(results)
        paint = statistics.median(p for p, _, _ in got)
        ready_p50 = statistics.median(d for _, _, d in got)
        medians[label] = (median, ready_p50)
        print(
            f"{label:<37}{paint:>6.0f}ms{median:>11.0f}ms{percentile(results, 0.95):>6.0f}"
            f"{median - floor_p50:>+8.0f}{ready_p50:>6.0f}ms"
        )
        if not label.startswith("baseline"):
            worst = max(worst, median)
    for label, (median, ready_p50) in medians.items():
        if f"baseline {label}" in medians:
            base, base_ready = medians[f"baseline {label}"]
            print(
                f"{label}: results {median / base:.2f}x the baseline's, "
                f"ready {ready_p50 / base_ready:.2f}x"
            )
    verdict = "met" if worst <= TARGET_MS else f"missed: {worst:.0f} ms"
    print(f"target: first results within {TARGET_MS:.0f} ms of launch (p50): {verdict}")
    uptime = shutil.which("uptime")
    load = subprocess.run([uptime], capture_output=True, text=True).stdout if uptime else ""
    print(f"uptime: {load.strip() or os.getloadavg()}; {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
