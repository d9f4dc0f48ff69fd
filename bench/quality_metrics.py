"""Ranking metrics of the quality benchmarks: hit@k, MRR and nDCG@10 over sessions.

Each query is scored from the 1-based ranks its gold sessions got (an empty list: none
was in the answer) and how many gold sessions it has; relevance is binary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Scores:
    hit1: float
    hit5: float
    mrr: float
    ndcg10: float
    count: int


def ndcg(gold_ranks: Sequence[int], gold_count: int, k: int = 10) -> float:
    """Binary nDCG@k: each gold session in the top k counts 1/log2(rank + 1)."""
    if gold_count <= 0:
        return 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r in gold_ranks if r <= k)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(gold_count, k)))
    return dcg / ideal


def score(outcomes: Sequence[tuple[Sequence[int], int]]) -> Scores:
    """Mean hit@1, hit@5, MRR and nDCG@10 of (gold ranks, gold count) per query."""
    n = len(outcomes)
    if n == 0:
        return Scores(0.0, 0.0, 0.0, 0.0, 0)
    firsts = [min(ranks) if ranks else None for ranks, _ in outcomes]
    return Scores(
        hit1=sum(1 for r in firsts if r is not None and r <= 1) / n,
        hit5=sum(1 for r in firsts if r is not None and r <= 5) / n,
        mrr=sum(1.0 / r for r in firsts if r is not None) / n,
        ndcg10=sum(ndcg(ranks, count) for ranks, count in outcomes) / n,
        count=n,
    )


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
