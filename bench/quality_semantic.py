"""The semantic half of the quality benchmark: embed the catalog with a candidate
model, and say what it cost (throughput on one core, bytes on disk).

The lexical runs come first, on a catalog built with embeddings switched off; then
each model of ``--models`` embeds the same parts (its vectors replace the last
model's: the catalog keeps one model's) and the hybrid runs follow with it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from convodex import config
from convodex.catalog import hybrid, vectors
from convodex.catalog.service import HistoryService

MODELS = ("static", "contextual")


def load(name: str) -> Any:
    if name == "static":
        from convodex.semantic.static import load

        return load()
    if name == "contextual":
        from contextual_model import ContextualModel

        return ContextualModel()
    raise SystemExit(f"unknown model {name!r} (known: {', '.join(MODELS)})")


def catalog_bytes(service: HistoryService, cache_dir: Path) -> int:
    """The catalog's size on disk with its write-ahead log folded in."""
    service.catalog.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    path = config.catalog_path(cache_dir)
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def vector_bytes(service: HistoryService) -> int:
    """The vectors table's own pages (dbstat), else its payload."""
    db = service.catalog.db
    try:
        row = db.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'vectors'").fetchone()
        return int(row[0] or 0)
    except Exception:  # dbstat is an optional SQLite module
        row = db.execute("SELECT sum(length(vec)) + 16 * count(*) FROM vectors").fetchone()
        return int(row[0] or 0)


def rate(mb: float, seconds: float) -> str:
    """MB/s, or KB/s when below one: the contextual model reads kilobytes a second."""
    per_second = mb / max(seconds, 1e-9)
    return f"{per_second:.2f} MB/s" if per_second >= 1 else f"{per_second * 1000:.1f} KB/s"


class TimedModel:
    """The model with the CPU seconds of its own ``embed`` calls counted: its throughput
    apart from reading the sources again (the pass's own figure includes that)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.name: str = model.name
        self.dimensions: int = model.dimensions
        self.cpu = 0.0
        self.bytes = 0

    def embed(self, texts: list[str]) -> Any:
        started = time.process_time()
        out = self.model.embed(texts)
        self.cpu += time.process_time() - started
        self.bytes += sum(len(t.encode("utf-8", "replace")) for t in texts)
        return out


def embed(service: HistoryService, cache_dir: Path, name: str, corpus_mb: float) -> Any:
    """Embed every part with model ``name``; print what it took; hybrid search uses it."""
    os.environ["CONVODEX_SEMANTIC"] = "on"
    before = catalog_bytes(service, cache_dir)
    started = time.perf_counter()
    model = load(name)
    loaded = time.perf_counter() - started
    timed: Any = TimedModel(model)  # what embed_pending calls of a model
    cpu = time.process_time()
    stats = vectors.embed_pending(service.catalog, timed)
    cpu = time.process_time() - cpu
    after = catalog_bytes(service, cache_dir)
    hybrid.load_model = lambda: model  # queries embedded by the same model
    mb = stats.bytes_embedded / 1e6
    own = vector_bytes(service)
    print(
        f"model {name} ({model.name}, {model.dimensions} dims): loaded in {loaded:.1f} s; "
        f"{stats.vectors} vectors from {mb:.1f} MB of user and assistant text in "
        f"{stats.seconds:.1f} s ({rate(mb, stats.seconds)} wall, "
        f"{rate(mb, cpu)} per CPU-second, reading the sources included; the model alone "
        f"{rate(timed.bytes / 1e6, timed.cpu)} per CPU-second)"
    )
    print(
        f"  catalog {before / 1e6:.1f} MB without embeddings, {after / 1e6:.1f} MB with "
        f"(+{(after - before) / 1e6:.1f} MB, vectors table {own / 1e6:.1f} MB = "
        f"{own / 1e6 / corpus_mb * 100:.1f}% of the {corpus_mb:.1f} MB corpus)"
    )
    return model
