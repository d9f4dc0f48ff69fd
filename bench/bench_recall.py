#!/usr/bin/env python3
"""Recall quality and hook latency (SPEC L18, issue 26): hit rate, false injections,
bytes per prompt, and the hook's whole-process latency p50/p95, with a warm service
and without one, interleaved in one run.

A Claude Code history from the project's corpus generator (``--mb`` of it) gets
``--planted`` extra sessions, each holding one past answer to a distinct problem
(a library, a component, a symptom, an identifier). Then the hook runs as Claude
Code runs it (``convodex recall``, JSON on stdin, a fresh process each time) for:
- one *related* prompt per planted session, phrased differently (half of them
  without the identifier): a hit when the injected block names that session;
- as many *unrelated* prompts (other problems in everyday words, and
  prompts about libraries the history never mentions): a false injection when the
  hook prints anything.
Each prompt runs twice in turn: alone (the hook opens the catalog in its own process)
and with a running ``convodex service`` (the thin client hands stdin to it: SPEC L20),
beside ``python -c pass``, the floor; both must inject the same blocks.
Targets: hit rate >= 80%, false injections <= 10%, p95 <= 150 ms on 1 GB.

Usage: bench/bench_recall.py [--mb 200] [--seed 1] [--corpus DIR] [--planted 40] [--keep DIR]
       (--mb 1024: the 1 GB history the latency target is set on; --keep DIR keeps the
       planted sessions and the indexed catalog there, so a second run only re-checks them)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import corpus
from ab import percentile

LIBRARIES = [
    "alembic", "celery", "kafka", "redis", "nginx", "terraform", "webpack", "pytest",
    "django", "grpc", "kubernetes", "sqlalchemy", "fastapi", "graphql", "rabbitmq",
    "elasticsearch", "prometheus", "airflow", "vite", "jest",
]  # fmt: skip
PROBLEMS = [
    ("migration", "duplicate key violates unique constraint", "dedupe the rows first"),
    ("worker", "heartbeat timeout after rebalance", "raise the session timeout"),
    ("consumer", "offset commit fails with rebalance in progress", "commit synchronously"),
    ("cache", "evicts keys under memory pressure", "set maxmemory-policy to allkeys-lru"),
    ("proxy", "returns 502 bad gateway on upload", "raise client_max_body_size"),
    ("plan", "wants to recreate the bucket on every apply", "ignore_changes on tags"),
    ("bundle", "chunk load error after deploy", "hash the chunk names"),
    ("fixture", "scope mismatch between session and function", "make it function scoped"),
    ("queryset", "n plus one queries on the admin list", "select_related the foreign key"),
    ("stream", "deadline exceeded on large uploads", "stream in smaller chunks"),
    ("pod", "crashloopbackoff after the config map change", "mount the new key"),
    ("session", "detached instance error after commit", "expire_on_commit false"),
    ("endpoint", "422 unprocessable entity on optional field", "default the field to none"),
    ("resolver", "returns null for nested connection", "return the edge list"),
    ("queue", "messages stuck unacked after restart", "enable publisher confirms"),
    ("index", "mapping conflict on the date field", "reindex with an explicit mapping"),
    ("alert", "fires on every scrape gap", "use a for clause of five minutes"),
    ("dag", "tasks stuck in queued state", "raise the pool slots"),
    ("dev server", "hot reload loops forever on symlinked package", "dedupe the package"),
    ("snapshot", "obsolete snapshot fails the ci run", "update snapshots with -u"),
]
UNRELATED = [
    "write a haiku about autumn leaves on a quiet lake",
    "please fix the failing test in this file and run it again",
    "what is the capital of australia",
    "explain the difference between a list and a tuple",
    "rename this variable to something clearer",
    "add a dark mode toggle to the preferences dialog",
    "summarize this function in one sentence",
    "make the button bigger and blue",
    "translate this paragraph into french",
    "can you review my changes before i push",
    "the svelte store loses its value when the tab sleeps",
    "our flutter widget test cannot find the golden file",
    "the unity shader compiles black on metal",
    "why is my rust borrow checker complaining about the iterator",
    "a haskell monad transformer stack question about readert",
    "the elm decoder fails on a nullable timestamp",
    "ocaml dune build cannot find the ppx rewriter",
    "zig comptime allocator question for a hash map",
    "the godot signal is emitted twice on scene reload",
    "matlab plot legend overlaps the axis labels",
]


def planted_sessions(count: int, seed: int) -> list[dict[str, object]]:
    """``count`` problems, each with its session id, question, answer and prompts."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        library = LIBRARIES[n % len(LIBRARIES)]
        component, symptom, fix = PROBLEMS[(n * 7 + n // len(LIBRARIES)) % len(PROBLEMS)]
        ident = f"{rng.choice(['orders', 'billing', 'users', 'audit', 'events'])}_{n}_sync"
        session = f"7e57{n:04d}-0000-4000-8000-{rng.getrandbits(48):012x}"
        question = f"the {library} {component} {symptom} in {ident}; what is going on?"
        answer = (
            f"Found it: in {ident} the {library} {component} {symptom} because of config; {fix}."
        )
        words = symptom.split()
        if n % 2:
            prompt = f"{library} {component} is back: {' '.join(words[:4])} again"
        else:
            prompt = f"again {ident} breaks, {library} {' '.join(words[-3:])}"
        out.append({"id": session, "question": question, "answer": answer, "prompt": prompt})
    return out


def write_planted(root: Path, planted: list[dict[str, object]], now_ms: int) -> None:
    for n, item in enumerate(planted):
        cwd = f"/home/bench/src/app{n % 3}"
        folder = root / cwd.strip("/").replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        at = now_ms - (n + 1) * 86_400_000
        lines = []
        parent = None
        for k, (role, text) in enumerate(
            [("user", item["question"]), ("assistant", item["answer"])]
        ):
            uuid = f"{item['id']}-{k}"
            content: object = text if role == "user" else [{"type": "text", "text": text}]
            lines.append(
                {
                    "type": role,
                    "uuid": uuid,
                    "parentUuid": parent,
                    "sessionId": item["id"],
                    "cwd": cwd,
                    "timestamp": time.strftime(
                        "%Y-%m-%dT%H:%M:%S.000Z", time.gmtime((at + k * 60_000) / 1000)
                    ),
                    "message": {"role": role, "content": content},
                }
            )
            parent = uuid
        path = folder / f"{item['id']}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")


def hook(convodex: str, cache: Path, prompt: str, env: dict[str, str]) -> tuple[float, bytes]:
    event = {
        "session_id": "bench-current",
        "transcript_path": "/tmp/bench-current.jsonl",
        "cwd": "/home/bench/src/app0",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    started = time.perf_counter()
    done = subprocess.run(
        [convodex, "recall", "--cache-dir", str(cache)],
        input=json.dumps(event).encode(),
        capture_output=True,
        env=env,
        check=False,
    )
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"error: the hook exited {done.returncode}: {done.stderr[-300:]!r}")
    return elapsed, done.stdout


def context(stdout: bytes) -> str:
    if not stdout.strip():
        return ""
    text = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str)
    return text


def in_process(cache: Path, prompts: list[str]) -> tuple[list[float], list[str]]:
    """Milliseconds of ``recall()`` itself per prompt, on one open read-only catalog, and
    the block text (empty: nothing) of each: quality without the process's start-up."""
    from convodex.catalog.service import HistoryService
    from convodex.recall.core import Prompt, recall

    service = HistoryService.open_existing(cache, [])
    if service is None:
        raise SystemExit("error: the catalog cannot be opened read-only")
    out, blocks = [], []
    with service:
        for text in prompts:
            started = time.perf_counter()
            block = recall(service, Prompt(text=text, cwd="/home/bench/src/app0"), 2048)
            out.append((time.perf_counter() - started) * 1000)
            blocks.append(block.text if block else "")
    return out, blocks


def service(convodex: str, verb: str, cache: Path, env: dict[str, str]) -> str:
    """``convodex service VERB`` for the bench's catalog: its one line."""
    argv = [convodex, "service", verb, "--cache-dir", str(cache)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if verb == "start" and done.returncode != 0:
        raise SystemExit(f"error: the service did not start: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()


def uptime() -> str:
    found = shutil.which("uptime")
    out = subprocess.run([found], capture_output=True, text=True).stdout if found else ""
    return f"{out.strip() or os.getloadavg()}; {os.cpu_count()} cores"


class HookRuns:
    """One way the hook runs (with a warm service or alone): what each prompt gave."""

    def __init__(self, label: str, env: dict[str, str]) -> None:
        self.label, self.env = label, env
        self.ms: list[float] = []
        self.blocks: list[str] = []

    def run(self, convodex: str, cache: Path, prompt: str) -> None:
        ms, out = hook(convodex, cache, prompt, self.env)
        self.ms.append(ms)
        self.blocks.append(context(out))

    def report(self, planted: list[dict[str, object]], floor: float) -> tuple[float, float]:
        hits = sum(f"[ref {p['id']}#" in b for p, b in zip(planted, self.blocks, strict=False))
        false = sum(bool(b) for b in self.blocks[len(planted) :])
        sizes = [len(b.encode()) for b in self.blocks]
        injected = [n for n in sizes if n]
        p50, p95 = statistics.median(self.ms), percentile(self.ms, 0.95)
        print(f"{self.label}:")
        print(f"  hit rate: {hits}/{len(planted)} = {hits / len(planted):.0%} (target >= 80%)")
        print(f"  false injections: {false}/{len(UNRELATED)} = "
              f"{false / len(UNRELATED):.0%} (target <= 10%)")  # fmt: skip
        print(f"  bytes per prompt: {statistics.mean(sizes):.0f} mean, "
              f"{statistics.mean(injected) if injected else 0:.0f} mean when injected, "
              f"{max(sizes)} max (budget 2048)")  # fmt: skip
        print(f"  hook latency (whole process, {len(self.ms)} runs): p50 {p50:.0f} ms, "
              f"p95 {p95:.0f} ms ({p50 - floor:+.0f} ms over the floor at p50; "
              f"target p95 <= 150 ms on 1 GB)")  # fmt: skip
        return p50, p95


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    corpus.add_arguments(ap)
    ap.add_argument("--planted", type=int, default=40, help="planted past answers (40)")
    ap.add_argument(
        "--keep",
        type=Path,
        help="keep the planted sessions and the catalog in DIR between runs (default: a "
        "fresh temporary one; indexing 1 GB takes minutes)",
    )
    args = ap.parse_args()
    convodex = str(Path(sys.executable).with_name("convodex"))
    if not os.access(convodex, os.X_OK):
        raise SystemExit(f"error: no {convodex}: run this with the venv's python (make bench)")
    root, _ = corpus.for_bench(args.corpus, "claude-code", args.mb, args.seed)
    planted = planted_sessions(args.planted, args.seed)
    prompts = [str(p["prompt"]) for p in planted] + UNRELATED
    with tempfile.TemporaryDirectory(prefix="convodex-bench-recall-") as tmp:
        work = args.keep.resolve() if args.keep else Path(tmp)
        extra = work / "planted"
        if not extra.is_dir():  # a kept one stays as it was, so its index is unchanged
            write_planted(extra, planted, int(time.time() * 1000))
        cache = work / "cache"
        receipts = work / "home" / "recall" / "receipts.jsonl"
        receipts.unlink(missing_ok=True)  # this run's outcomes only
        env = {**os.environ, "CONVODEX_CACHE_HOME": str(cache), "CONVODEX_HOME": f"{work}/home"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode
        env.pop("CONVODEX_RECALL", None)
        # Recall is lexical (one hit per document): embedding 1 GB for search by meaning
        # would take most of an hour on two cores and change nothing measured here.
        env["CONVODEX_SEMANTIC"] = "off"
        # Alone: a runtime directory no service listens in; warm: the service's (always
        # under the temporary directory: a socket's path is short).
        env["XDG_RUNTIME_DIR"] = f"{tmp}/no-service"
        warm_env = {**env, "XDG_RUNTIME_DIR": f"{tmp}/run"}
        Path(warm_env["XDG_RUNTIME_DIR"]).mkdir(mode=0o700)
        started = time.perf_counter()
        for folder in (root, extra):
            done = subprocess.run(
                [convodex, "index", "--root", f"{folder}:claude-code", "--cache-dir", str(cache)],
                env=env,
                capture_output=True,
                check=False,
            )
            if done.returncode != 0:
                raise SystemExit(f"error: index failed: {done.stderr[-300:]!r}")
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
        print(f"corpus: {root} ({size:.1f} MB) + {len(planted)} planted sessions; "
              f"indexed in {time.perf_counter() - started:.1f} s")  # fmt: skip
        alone, warm = (
            HookRuns("hook alone (in-process)", env),
            HookRuns("hook with a service", warm_env),
        )
        floor: list[float] = []
        print(f"service: {service(convodex, 'start', cache, warm_env)}")
        try:
            for way in (alone, warm):  # warm-up: bytecode, page cache, the service's catalog
                way.run(convodex, cache, "warm up the bytecode and the catalog pages")
                way.ms, way.blocks = [], []
            for prompt in prompts:  # interleaved: load drifts hit both alike
                started = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
                floor.append((time.perf_counter() - started) * 1000)
                alone.run(convodex, cache, prompt)
                warm.run(convodex, cache, prompt)
            status = service(convodex, "status", cache, warm_env)
        finally:
            service(convodex, "stop", cache, warm_env)
        outcomes = [json.loads(line)["outcome"] for line in receipts.read_text().splitlines()]
        core, blocks = in_process(cache, prompts)
        core_hits = sum(f"[ref {p['id']}#" in b for p, b in zip(planted, blocks, strict=False))
        core_false = sum(bool(b) for b in blocks[len(planted) :])
    low = statistics.median(floor)
    print(f"floor (venv python -c pass, {len(floor)} runs): p50 {low:.0f} ms")
    alone_p50, alone_p95 = alone.report(planted, low)
    warm_p50, warm_p95 = warm.report(planted, low)
    print(f"with a service vs alone: p50 {alone_p50 / warm_p50:.1f}x, "
          f"p95 {alone_p95 / warm_p95:.1f}x faster")  # fmt: skip
    same = sum(a == w for a, w in zip(alone.blocks, warm.blocks, strict=True))
    print(f"the same block either way: {same}/{len(prompts)} prompts")
    print(f"service: {status}")
    print(f"hook outcomes (both ways): "
          f"{', '.join(f'{o} {outcomes.count(o)}' for o in sorted(set(outcomes)))}")  # fmt: skip
    print(f"recall() in process (the library call a warm service makes): "
          f"p50 {statistics.median(core):.1f} ms, p95 {percentile(core, 0.95):.1f} ms; "
          f"hit rate {core_hits}/{len(planted)} = {core_hits / len(planted):.0%}, "
          f"false injections {core_false}/{len(UNRELATED)}")  # fmt: skip
    print(f"uptime: {uptime()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
