#!/usr/bin/env python3
"""Lexical ranking variants on the quality benchmark (issue 27): each one a reorder of a
grouped search's first candidates, scored against today's grouped ranking in one run.

- ``proximity``: candidates whose words all stand within ``--window`` tokens of each
  other (FTS5's ``NEAR``) first, the rest after, each group in BM25's order;
- ``kinds``: BM25 weighted by what a part is (user text above the agent's answer
  above tool calls and output);
- ``recency``: BM25 weighted up for recent messages (``--beta`` at age 0, halving
  every ``--half-life`` days).

None of them is in the tool: each is kept only when this benchmark says it helps
without lowering the exact-identifier class (the closing notes hold the figures).
Usage: bench/bench_ranking_variants.py [--mb 60] [--seed 7] [--variants …]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_quality as bq
import corpus
from convodex.catalog import search
from convodex.catalog.db import Catalog
from convodex.catalog.plan import Plan
from convodex.catalog.rowids import TABLES, Candidate, kind_of, unit_base
from convodex.catalog.service import HistoryService
from convodex.sources.roots import resolve_root

KIND_WEIGHTS = {
    "user_text": 1.3,
    "assistant_text": 1.0,
    "tool_input": 0.8,
    "tool_error": 0.9,
    "tool_output": 0.5,
}
Reorder = Callable[[Plan, list[Candidate]], list[Candidate] | None]


def proximity(catalog: Catalog, args: argparse.Namespace) -> Reorder:
    def reorder(plan: Plan, head: list[Candidate]) -> list[Candidate] | None:
        terms = plan.query.terms()
        if len(terms) < 2 or not head:
            return None
        phrases = " ".join('"' + " ".join(t.tokens) + '"' for t in terms)
        table = TABLES["documents"]
        stored = {table.stored(a): a for _, a, _ in head if kind_of(a) != "tool_output"}
        rows = catalog.db.execute(
            "SELECT rowid FROM documents WHERE documents MATCH ? "
            "AND rowid IN (SELECT value FROM json_each(?))",
            [f"NEAR({phrases}, {args.window})", json.dumps(list(stored))],
        ).fetchall()
        close = {stored[r[0]] for r in rows}
        return [c for c in head if c[1] in close] + [c for c in head if c[1] not in close]

    return reorder


def kinds(catalog: Catalog, args: argparse.Namespace) -> Reorder:
    def reorder(plan: Plan, head: list[Candidate]) -> list[Candidate] | None:
        weight = KIND_WEIGHTS.get
        return sorted(head, key=lambda c: (c[2] * weight(kind_of(c[1]), 1.0), c[1]))

    return reorder


def recency(catalog: Catalog, args: argparse.Namespace) -> Reorder:
    now = time.time() * 1000

    def reorder(plan: Plan, head: list[Candidate]) -> list[Candidate] | None:
        bases = sorted({unit_base(a) for _, a, _ in head})
        at = dict(
            catalog.db.execute(
                "SELECT base, at FROM messages WHERE base IN (SELECT value FROM json_each(?))",
                [json.dumps(bases)],
            ).fetchall()
        )

        def key(c: Candidate) -> tuple[float, int]:
            age = max(0.0, (now - at.get(unit_base(c[1]), 0)) / 86_400_000)
            return (c[2] * (1 + args.beta * 2 ** (-age / args.half_life)), c[1])

        return sorted(head, key=key)

    return reorder


VARIANTS: dict[str, Callable[[Catalog, argparse.Namespace], Reorder]] = {
    "proximity": proximity,
    "kinds": kinds,
    "recency": recency,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    corpus.add_arguments(ap, mb=60.0)
    ap.set_defaults(seed=7)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--window", type=int, default=10, help="proximity: tokens apart (10)")
    ap.add_argument("--beta", type=float, default=0.2, help="recency: boost at age 0 (0.2)")
    ap.add_argument("--half-life", type=float, default=90.0, help="recency: days (90)")
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    queries = bq.load_queries()
    root, manifest = corpus.for_bench(args.corpus, "claude-code", args.mb, args.seed)
    distractors = manifest.root("claude-code") if manifest else root
    os.environ["CONVODEX_SEMANTIC"] = "off"  # lexical ranking only
    plain = search.Searcher.__init__
    with tempfile.TemporaryDirectory(prefix="convodex-bench-ranking-") as tmp:
        roots = [
            resolve_root(bq.FIXTURES),
            resolve_root(f"{bq.TRANSCRIPTS}:claude-code"),
            resolve_root(f"{distractors}:claude-code"),
        ]
        with HistoryService.open(Path(tmp), roots) as service:
            service.index()
            runs = [bq.score_mode(service, "lexical", "relaxed", queries, args)]
            for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
                make = VARIANTS[name]

                def with_variant(self: Any, catalog: Catalog, *rest: Any, **kw: Any) -> None:
                    plain(self, catalog, *rest[:2], reorder=make(catalog, args))  # noqa: B023

                search.Searcher.__init__ = with_variant  # type: ignore[method-assign]
                try:
                    run = bq.score_mode(service, "lexical", "relaxed", queries, args)
                finally:
                    search.Searcher.__init__ = plain  # type: ignore[method-assign]
                run.name = name
                runs.append(run)
            bq.print_table("lexical ranking variants (grouped, relaxed):", runs, queries)
    print(f"\nuptime: {os.getloadavg()}; {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
