"""The accelerators' A/B (``--accelerators on,off``): a bench measures each figure with
the accelerators on and off in interleaved rounds (on, off, on, off …) on the same
corpus, so a drift of the machine's load hits both, and prints each figure for both
settings with the ratio off/on beside the load. Imports nothing of convodex at import
time, so a bench can time an older checkout beside it."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convodex.catalog.speed.settings import Accelerators

SETTINGS = ("on", "off")
ENV = "CONVODEX_ACCELERATORS"


def parse(text: str) -> tuple[str, ...]:
    """``on``, ``off`` or ``on,off`` (each at most once, in the order given)."""
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    if not chosen or len(set(chosen)) != len(chosen) or set(chosen) - set(SETTINGS):
        raise argparse.ArgumentTypeError("--accelerators takes on, off or on,off")
    return chosen


def add_argument(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--accelerators",
        type=parse,
        default=SETTINGS,
        help="on, off or on,off (default: both, interleaved, with the ratio off/on)",
    )


def rounds(settings: tuple[str, ...], count: int) -> Iterator[tuple[int, str]]:
    """(round, setting) in ABAB order: every setting once a round."""
    for n in range(count):
        for setting in settings:
            yield n, setting


def env(setting: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a convodex process run with ``setting``."""
    return {**(os.environ if base is None else base), ENV: setting}


def accelerators(setting: str, *, search_workers: int = 0) -> Accelerators:
    """What an in-process measurement with ``setting`` uses (the service's own rule)."""
    from convodex.catalog.speed.settings import Accelerators

    return Accelerators.for_mode(setting, search_workers=search_workers)


def uptime() -> str:
    return subprocess.getoutput("uptime").strip()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Figures:
    """Samples of named figures for each setting; ``table`` prints them side by side."""

    def __init__(self, settings: tuple[str, ...]) -> None:
        self.settings = settings
        self.samples: dict[str, dict[str, list[float]]] = {}
        self.notes: dict[str, str] = {}

    def add(self, name: str, setting: str, value: float, note: str = "") -> None:
        self.samples.setdefault(name, {}).setdefault(setting, []).append(value)
        if note:
            self.notes[name] = note

    def value(self, name: str, setting: str, q: float = 0.5) -> float | None:
        values = self.samples.get(name, {}).get(setting)
        if not values:
            return None
        return statistics.median(values) if q == 0.5 else percentile(values, q)

    def table(self, title: str, *, p95: bool = False, width: int = 34) -> None:
        """Each figure's median (and p95) for each setting, and off/on of each when both
        were measured; ``p95``: for latencies, the samples of every round together."""
        stats = [(0.5, "p50"), (0.95, "p95")] if p95 else [(0.5, "")]
        both = set(SETTINGS) <= set(self.settings)
        columns = [(s, q, f"{s} {label}".strip()) for s in self.settings for q, label in stats]
        if both:
            columns += [("off/on", q, f"off/on {label}".strip()) for q, label in stats]
        print(f"\n{title} ({', '.join(self.settings)} interleaved):")
        print(f"  {'':<{width}}" + "".join(f"{head:>12}" for _, _, head in columns))
        for name in self.samples:
            cells = []
            for setting, q, _ in columns:
                if setting == "off/on":
                    on, off = self.value(name, "on", q), self.value(name, "off", q)
                    cell = f"{off / on:.2f}x" if on and off is not None else "-"
                else:
                    value = self.value(name, setting, q)
                    cell = "-" if value is None else f"{value:.1f}"
                cells.append(f"{cell:>12}")
            note = self.notes.get(name, "")
            print(f"  {name:<{width}}" + "".join(cells) + (f"  {note}" if note else ""))
        print(f"  uptime: {uptime()}; {os.cpu_count()} cores")
