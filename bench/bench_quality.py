#!/usr/bin/env python3
"""Retrieval quality benchmark (issue 27): does the right session come first?

Indexes the real public transcripts (tests/fixtures/ and bench/quality/transcripts/)
mixed into a generated history (corpus.py, cached under bench/.corpus/) as
distractors, runs every query of bench/quality/queries.json (each with its class and
gold session, some with the gold message) and prints hit@1, hit@5, MRR and nDCG@10
per class and overall, and each mode's latency p50/p95, in one run. Sessions are
ranked by the first hit of each in the answer (``--limit`` hits a query).
``--longmemeval FILE`` also scores the public LongMemEval-S file (``longmemeval.py``).
Each mode runs in every ranking variant of ``--variants`` on the same catalog, so a
ranking change is measured against today's ranking in one run (A/B): ``today`` (one
hit per document, as before grouping), ``grouped`` (each session once, SPEC L19; an
answer relaxed to any of the words counts as no answer) and ``relaxed`` (grouped, with
the relaxed answer kept).
Usage: bench/bench_quality.py [--mb 60] [--seed 7] [--corpus DIR] [--modes lexical,hybrid]
       [--models static,contextual] [--semantic-weights 0.5,1]
       [--variants today,grouped,relaxed]
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

import corpus
import longmemeval
import quality_metrics as qm
import quality_semantic
from convodex.catalog import hybrid
from convodex.catalog.plan import SearchRequest
from convodex.catalog.service import HistoryService
from convodex.errors import QueryError
from convodex.sources.roots import resolve_root

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FIXTURES = REPO / "tests" / "fixtures"
TRANSCRIPTS = HERE / "quality" / "transcripts"
QUERIES = HERE / "quality" / "queries.json"
CLASSES = ("paraphrase", "identifier", "path", "command", "cjk", "when")


@dataclass(frozen=True)
class Query:
    """One benchmark query: what a person types, and where the answer is."""

    id: str
    cls: str
    text: str
    # Gold sessions: ``relpath`` (under tests/fixtures), ``transcripts:relpath`` or
    # either with ``::session_id`` when the file holds several sessions.
    gold: tuple[str, ...]
    message: int | None = None
    since: str | None = None
    until: str | None = None


def load_queries(path: Path = QUERIES) -> list[Query]:
    data = json.loads(path.read_text("utf-8"))
    return [
        Query(
            id=q["id"],
            cls=q["class"],
            text=q["query"],
            gold=tuple(q["gold"]),
            message=q.get("message"),
            since=q.get("since"),
            until=q.get("until"),
        )
        for q in data["queries"]
    ]


def session_key(session_path: str, session_id: str) -> str:
    """A hit's session as the queries name it (see :class:`Query`)."""
    path = Path(session_path)
    for prefix, root in (("", FIXTURES), ("transcripts:", TRANSCRIPTS)):
        if path.is_relative_to(root):
            return f"{prefix}{path.relative_to(root).as_posix()}::{session_id}"
    return f"{session_path}::{session_id}"


def matches(key: str, gold: str) -> bool:
    return key == gold if "::" in gold else key.split("::", 1)[0] == gold


@dataclass
class Outcome:
    """What one query got in one mode."""

    rank: int | None  # 1-based rank of the first gold session, None: not in the answer
    gold_ranks: list[int]
    message_found: bool | None  # the gold message among the first 10 hits (if any)
    seconds: float
    mode_used: str


@dataclass
class ModeRun:
    name: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)


Search = Callable[[SearchRequest], tuple[list[tuple[str, int]], str]]

# A ranking variant: whether the search groups by session, whether a relaxed answer
# (any of the words, when all of them found nothing) is kept.
VARIANTS: dict[str, tuple[bool, bool]] = {
    "today": (False, False),
    "grouped": (True, False),
    "relaxed": (True, True),
}


def run_query(search: Search, q: Query, limit: int) -> Outcome:
    request = SearchRequest(query=q.text, limit=limit, since=q.since, until=q.until)
    started = time.perf_counter()
    try:
        hits, used = search(request)
    except QueryError:
        hits, used = [], "error"  # what the person gets: an error line, no hits
    seconds = time.perf_counter() - started
    ranked: list[str] = []
    first_hits: dict[str, list[int]] = {}
    for key, message in hits:
        if key not in first_hits:
            ranked.append(key)
            first_hits[key] = []
        first_hits[key].append(message)
    gold_ranks = [i + 1 for i, key in enumerate(ranked) if any(matches(key, g) for g in q.gold)]
    message_found = None
    if q.message is not None:
        message_found = any(
            any(matches(key, g) for g in q.gold) and message == q.message
            for key, message in hits[:10]
        )
    return Outcome(
        rank=gold_ranks[0] if gold_ranks else None,
        gold_ranks=gold_ranks,
        message_found=message_found,
        seconds=seconds,
        mode_used=used,
    )


def service_search(service: HistoryService, mode: str, variant: str = "today") -> Search:
    group, keep_relaxed = VARIANTS[variant]

    def search(request: SearchRequest) -> tuple[list[tuple[str, int]], str]:
        request = msgspec.structs.replace(request, group=group)
        page = service.search(longmemeval.with_mode(request, mode))
        used = getattr(page, "mode", None) or "lexical"
        if page.relaxed and not keep_relaxed:
            return [], str(used)
        return [(session_key(h.session_path, h.session_id), h.message_index) for h in page.hits], (
            str(used)
        )

    return search


def print_table(title: str, runs: Sequence[ModeRun], queries: Sequence[Query]) -> None:
    print(f"\n{title}")
    width = max(14, *(len(r.name) + 5 for r in runs))
    header = f"{'class':<12}{'n':>4}  " + "  ".join(
        f"{r.name + ' h@1':>{width}}{'h@5':>6}{'MRR':>6}{'nDCG':>6}" for r in runs
    )
    print(header)
    groups = [(c, [q for q in queries if q.cls == c]) for c in CLASSES]
    groups = [(c, g) for c, g in groups if g] + [("overall", list(queries))]
    for cls, group in groups:
        cells = []
        for run in runs:
            scores = qm.score([(run.outcomes[q.id].gold_ranks, len(q.gold)) for q in group])
            cells.append(
                f"{scores.hit1:>{width}.2f}{scores.hit5:>6.2f}{scores.mrr:>6.2f}{scores.ndcg10:>6.2f}"
            )
        print(f"{cls:<12}{len(group):>4}  " + "  ".join(cells))
    for run in runs:
        timed = [o.seconds * 1000 for o in run.outcomes.values()]
        found = [o.message_found for o in run.outcomes.values() if o.message_found is not None]
        used = sorted({o.mode_used for o in run.outcomes.values()} - {"error"})
        errors = sum(o.mode_used == "error" for o in run.outcomes.values())
        print(
            f"  {run.name}: latency p50 {statistics.median(timed):.1f} ms, "
            f"p95 {qm.percentile(timed, 0.95):.1f} ms over {len(timed)} queries; "
            f"gold message in the first 10 hits {sum(found)}/{len(found)}; "
            f"mode used: {', '.join(used)}; {errors} queries refused as malformed"
        )


def misses(run: ModeRun, queries: Sequence[Query], top: int = 5) -> list[str]:
    return [
        f"{q.id} [{q.cls}] {q.text!r}: rank {run.outcomes[q.id].rank}"
        for q in queries
        if (run.outcomes[q.id].rank or 10**9) > top
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    corpus.add_arguments(ap, mb=60.0)
    ap.set_defaults(seed=7)
    ap.add_argument("--modes", default="lexical", help="comma-separated: lexical,hybrid")
    ap.add_argument(
        "--models",
        default="static",
        help="comma-separated embedding models for hybrid: static (shipped), contextual",
    )
    ap.add_argument(
        "--semantic-weights",
        default=str(hybrid.SEMANTIC_WEIGHT),
        help="comma-separated weights of the semantic ranking in the fusion (BM25's: 1)",
    )
    ap.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"comma-separated ranking variants, each in every mode ({','.join(VARIANTS)})",
    )
    ap.add_argument("--limit", type=int, default=50, help="hits asked per query (50)")
    ap.add_argument("--runs", type=int, default=3, help="timed passes per mode (3)")
    ap.add_argument("--misses", action="store_true", help="list queries missing the top 5")
    ap.add_argument("--longmemeval", type=Path, help="a LongMemEval-S JSON file to score too")
    ap.add_argument("--json", type=Path, help="also write every outcome here")
    args = ap.parse_args()
    queries = load_queries()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        ap.error(f"unknown variant {unknown[0]!r} (known: {', '.join(VARIANTS)})")
    root, manifest = corpus.for_bench(args.corpus, "claude-code", args.mb, args.seed)
    distractors = manifest.root("claude-code") if manifest else root
    with tempfile.TemporaryDirectory(prefix="convodex-bench-quality-") as tmp:
        roots: list[Path] = [
            resolve_root(FIXTURES),
            resolve_root(f"{TRANSCRIPTS}:claude-code"),
            resolve_root(f"{distractors}:claude-code"),
        ]
        os.environ["CONVODEX_SEMANTIC"] = "off"  # lexical first: embeddings come after
        with HistoryService.open(Path(tmp), roots) as service:
            started = time.perf_counter()
            stats = service.index()
            corpus_mb = stats.bytes_read / 1e6
            print(
                f"corpus: {corpus_mb:.1f} MB, {stats.indexed} sources "
                f"({distractors} as distractors) indexed in {time.perf_counter() - started:.1f} s"
            )
            print(f"queries: {len(queries)} ({QUERIES.relative_to(REPO)})")
            runs = [
                score_mode(service, mode, variant, queries, args)
                for mode in modes
                if mode != "hybrid"
                for variant in variants
            ]
            if "hybrid" in modes:
                weights = [float(w) for w in args.semantic_weights.split(",") if w.strip()]
                for name in [m.strip() for m in args.models.split(",") if m.strip()]:
                    quality_semantic.embed(service, Path(tmp), name, corpus_mb)
                    for weight in weights:
                        hybrid.SEMANTIC_WEIGHT = weight
                        for variant in variants:
                            run = score_mode(service, "hybrid", variant, queries, args)
                            run.name = f"hybrid[{name} w{weight:g}]/{variant}"
                            runs.append(run)
            print_table("session ranking (first hit of each session), per class:", runs, queries)
            if args.misses:
                for run in runs:
                    print(f"\nmisses of {run.name} (gold not in the top 5):")
                    for line in misses(run, queries):
                        print("  " + line)
            if args.json:
                args.json.write_text(
                    json.dumps(
                        {r.name: {k: vars(o) for k, o in r.outcomes.items()} for r in runs},
                        indent=1,
                    ),
                    "utf-8",
                )
    if args.longmemeval:
        longmemeval.run(args.longmemeval, modes, args.limit)
    uptime = shutil.which("uptime")
    load = subprocess.run([uptime], capture_output=True, text=True).stdout if uptime else ""
    print(f"\nuptime: {load.strip() or os.getloadavg()}; {os.cpu_count()} cores")
    return 0


def score_mode(
    service: HistoryService,
    mode: str,
    variant: str,
    queries: Sequence[Query],
    args: argparse.Namespace,
) -> ModeRun:
    """One warm-up pass, then ``runs`` timed passes; each query's fastest time is kept
    per pass, and its ranks come from the last pass (they never change)."""
    search = service_search(service, mode, variant)
    run = ModeRun(f"{mode}/{variant}")
    for q in queries:
        run_query(search, q, args.limit)
    samples: dict[str, list[float]] = {q.id: [] for q in queries}
    for _ in range(max(1, args.runs)):
        for q in queries:
            outcome = run_query(search, q, args.limit)
            samples[q.id].append(outcome.seconds)
            run.outcomes[q.id] = outcome
    for q in queries:
        run.outcomes[q.id].seconds = statistics.median(samples[q.id])
    return run


if __name__ == "__main__":
    sys.exit(main())
