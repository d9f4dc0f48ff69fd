"""CLI helpers that need no click: a no-op ``index`` answers with them before click
loads (``noop_index``), and the click commands print through the same ones."""

from __future__ import annotations

from pathlib import Path

from convodex.models import IndexStats


def roots_or_defaults(given: tuple[str, ...]) -> list[Path]:
    """The roots a command works on: those given (which must exist), else the defaults."""
    from convodex.sources.roots import default_roots, resolve_root

    if given:
        return [resolve_root(p) for p in given]
    return [resolve_root(p, must_exist=False) for p in default_roots()]


def counted(count: int, noun: str) -> str:
    """``1 source``, ``2 sources``: a count with its noun in the right number."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def index_summary(stats: IndexStats, failed: int) -> str:
    """One line: what this run changed, or that it changed nothing; ``failed`` counts
    every failed source of the roots (as ``doctor`` does), not only this run's."""
    sources = counted(stats.sources, "source")
    if not (stats.indexed or stats.removed or stats.failed or stats.missing):
        return f"nothing changed: {sources}, {failed} failed ({stats.seconds:.2f} s)"
    mb = stats.bytes_read / 1e6
    return (
        f"indexed {stats.indexed} of {sources} ({counted(stats.messages, 'message')}, "
        f"{mb:.1f} MB) in {stats.seconds:.2f} s; {failed} failed, {stats.removed} removed"
    )
