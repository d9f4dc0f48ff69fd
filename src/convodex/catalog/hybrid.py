"""Hybrid search (SPEC L19): BM25's order fused with the embeddings' by reciprocal rank.

A grouped search's first candidates (``ranked.HEAD``, BM25's order) and the parts
nearest the query's vector (every filter applied in SQL) meet in one list by weighted
reciprocal rank fusion: a document's score is ``Σ weight / (K + rank)`` over the
rankings it is in. RRF needs no calibration between BM25 scores and cosines, and
ties break by address, so the fusion is deterministic. ``LEXICAL_WEIGHT`` above the
semantic weight keeps an exact identifier's match first (chosen by
``bench/bench_quality.py``: the identifier class must not fall below lexical's).

``mode``: ``lexical`` never fuses; ``hybrid`` fuses when it can and otherwise answers
lexically with a one-line note saying why; ``auto`` fuses when the catalog holds
vectors and the model loads, silently lexical otherwise. The answer's ``mode`` says
which ran.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from convodex import semantic
from convodex.catalog import vectors
from convodex.catalog.db import Catalog
from convodex.catalog.plan import Plan
from convodex.catalog.rowids import TABLES, Candidate
from convodex.errors import QueryError
from convodex.sqlite import sqlite3

if TYPE_CHECKING:
    from convodex.semantic.static import StaticModel

MODES = ("auto", "lexical", "hybrid")
K = 60
# Chosen on bench/bench_quality.py (64 MB, 160 queries; h@1 / h@5 overall, lexical
# 0.79 / 0.87): weight 0.5 with 50 parts 0.70 / 0.85, 0.1 with 20 parts 0.77 / 0.88,
# 0.05 with 10 parts 0.79 / 0.88 and no class below lexical's h@5 (the static model's
# meaning mostly adds sessions no word finds: "when" queries, pure paraphrases).
LEXICAL_WEIGHT = 1.0
SEMANTIC_WEIGHT = 0.05
# Nearest parts looked at before filters, and kept after them.
NEAREST = 500
SEMANTIC_HEAD = 10


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise QueryError("mode must be auto, lexical or hybrid")
    return mode


def load_model() -> StaticModel:
    """The model, or ``SemanticUnavailable`` saying why in one line."""
    from convodex.semantic.static import load

    return load()


class Fusion:
    """One hybrid search: the ``ranked.Reorder`` hook, and which candidates it added
    that match no word (hydrated with the part's opening, not a match)."""

    def __init__(self, catalog: Catalog, model: StaticModel) -> None:
        self.catalog = catalog
        self.model = model
        self.semantic_only: set[int] = set()

    def semantic(self, plan: Plan) -> list[tuple[int, float]]:
        """The parts nearest the query's words, every filter of the plan applied."""
        words = " ".join(" ".join(term.tokens) for term in plan.query.terms())
        if not words.strip():
            return []
        query = self.model.embed([words])[0]
        found = vectors.nearest(vectors.matrix(self.catalog), query, NEAREST)
        if not found:
            return []
        admitted = self._admitted(plan, [address for address, _ in found])
        return [(a, s) for a, s in found if a in admitted][:SEMANTIC_HEAD]

    def _admitted(self, plan: Plan, addresses: list[int]) -> set[int]:
        """The addresses the plan's filters keep: its conditions on ``documents.rowid``
        evaluated over these rows (a CTE named as the table), no FTS5 query."""
        table = TABLES["documents"]
        stored = {table.stored(a): a for a in addresses}
        if not stored:
            return set()
        where = plan.where("documents")
        rows = self.catalog.db.execute(
            "WITH documents(rowid) AS (SELECT value FROM json_each(?)) "
            f"SELECT rowid FROM documents WHERE 1{where.text()}",
            [json.dumps(list(stored)), *where.params],
        )
        return {stored[int(r[0])] for r in rows}

    def reorder(self, plan: Plan, head: list[Candidate]) -> list[Candidate]:
        scores: dict[int, float] = {}
        for rank, (_, address, _) in enumerate(head):
            scores[address] = scores.get(address, 0.0) + LEXICAL_WEIGHT / (K + rank + 1)
        lexical = set(scores)
        for rank, (address, _) in enumerate(self.semantic(plan)):
            scores[address] = scores.get(address, 0.0) + SEMANTIC_WEIGHT / (K + rank + 1)
        self.semantic_only = set(scores) - lexical
        ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        # Scores as FTS5's rank reads (lower is better): a hit shows ``-score``.
        return [(float(i), a, -round(score * 1000, 6)) for i, (a, score) in enumerate(ordered)]


def prepare(catalog: Catalog, mode: str, grouped: bool) -> tuple[Fusion | None, str | None]:
    """The fusion a search in ``mode`` runs with (None: lexical), and the one line
    that says why a hybrid search was asked for and lexical ran."""
    from convodex.semantic.static import SemanticUnavailable

    if check_mode(mode) == "lexical":
        return None, None
    asked = mode == "hybrid"
    if semantic.switched_off():
        return None, "semantic search is off (CONVODEX_SEMANTIC=off)" if asked else None
    if not grouped:
        note = "hybrid search ranks sessions; one hit per document (--no-group) is lexical"
        return None, note if asked else None
    try:
        present = vectors.has_vectors(catalog.db)
    except sqlite3.OperationalError:  # a read-only catalog of an older schema
        present = False
    if not present:
        note = (
            "this catalog holds no embeddings yet, so the search was lexical "
            "(they are computed after indexing when convodex[semantic] is installed)"
        )
        return None, note if asked else None
    try:
        model = load_model()
    except SemanticUnavailable as exc:
        return None, f"{exc}; the search was lexical"
    return Fusion(catalog, model), None
