"""Which accelerators run: one settings value the service builds from ``config`` and
passes in (``Wing``). Every accelerator changes nothing but time, so any of them may be
off, and all of them are off unless asked for (``Searcher(catalog)`` is the core alone).
"""

from __future__ import annotations

import os

import msgspec

from convodex import config
from convodex.errors import ConfigError

# Shares beyond the cores only wait (``config.SEARCH_SHARES``: four at most).
MAX_SHARES = 4
# A helper process pays for itself only on bulk work, and only with a core of its own:
# on one core it competes with the committing process and adds the cost of passing
# batches over (measured: one process on one core is faster than two).
HELPER_MIN_BYTES = 24 * 1024 * 1024
HELPER_MIN_CPUS = 2
# Words with at least this many documents get a band, the most frequent first, at most
# this many words (``bands``: why these numbers).
BAND_LEAST_MATCHES = 20_000
BAND_MOST = 32
# Eager (``Accelerators.eager``): a band for every word of at least two documents.
EAGER_BAND_LEAST_MATCHES = 2
# Index segments a table keeps before a service's scan merges them (``segments``);
# eager: any second one.
MERGE_ABOVE = 4
EAGER_MERGE_ABOVE = 1


def usable_cpus() -> int:
    """The CPUs this process may run on (``taskset`` and cgroups narrow them)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


class Accelerators(msgspec.Struct, frozen=True):
    """The accelerators a catalog is served with (docs/architecture.md)."""

    # A frequent word's first page from its band (``bands``), bands kept current.
    bands: bool = False
    # How many rowid ranges one search runs at once, each on its own connection and
    # thread (``split``; 1: one connection).
    shares: int = 1
    # Reading and tokenizing in a helper process while this one commits (``helper``),
    # on runs of at least ``helper_min_bytes``.
    helper_process: bool = False
    helper_min_bytes: int = HELPER_MIN_BYTES
    # Kept results: ordered candidate lists for later pages, session titles, progress
    # (``caches``).
    caches: bool = False
    # Worker processes that run searches for a serving process (``workers``).
    search_workers: int = 0
    # Which words get bands (``bands.refresh``).
    band_least_matches: int = BAND_LEAST_MATCHES
    band_most: int = BAND_MOST
    # A service's full scan merges a table's index segments beyond ``merge_above``
    # (``segments``).
    merges: bool = False
    merge_above: int = MERGE_ABOVE

    @classmethod
    def everything(cls, *, search_workers: int = 0, shares: int = MAX_SHARES) -> Accelerators:
        """Every accelerator on (shares and the helper as far as the CPUs go)."""
        cpus = usable_cpus()
        return cls(
            bands=True,
            shares=max(1, min(shares, MAX_SHARES, cpus)),
            helper_process=cpus >= HELPER_MIN_CPUS,
            helper_min_bytes=HELPER_MIN_BYTES,
            caches=True,
            search_workers=search_workers,
            merges=True,
        )

    @classmethod
    def eager(cls, *, search_workers: int = 0, shares: int = MAX_SHARES) -> Accelerators:
        """Every accelerator on and at work however small the history: the helper
        process on every run, whatever the CPUs, and a band for every frequent word.
        No faster, only what behaviour tests hold to the core's answers (an
        accelerator changes nothing but time, at any size)."""
        return msgspec.structs.replace(
            cls.everything(search_workers=search_workers, shares=shares),
            helper_process=True,
            helper_min_bytes=1,
            band_least_matches=EAGER_BAND_LEAST_MATCHES,
            merge_above=EAGER_MERGE_ABOVE,
        )

    @classmethod
    def from_config(cls, *, search_workers: int = 0) -> Accelerators:
        """What the environment asks for: every accelerator unless
        ``CONVODEX_ACCELERATORS=off`` (``eager``: at work at any size, for tests);
        ``CONVODEX_SEARCH_SHARES`` narrows the split."""
        return cls.for_mode(accelerators_mode(), search_workers=search_workers)

    @classmethod
    def for_mode(cls, mode: str, *, search_workers: int = 0) -> Accelerators:
        """What ``CONVODEX_ACCELERATORS=<mode>`` asks for (a bench's A/B asks for both)."""
        if mode == "off":
            return OFF
        make = cls.eager if mode == EAGER else cls.everything
        return make(search_workers=search_workers, shares=config.SEARCH_SHARES.value())


OFF = Accelerators()
ON_VALUES, OFF_VALUES = ("on", "1", "yes", "true"), ("off", "0", "no", "false")
EAGER = "eager"


def accelerators_mode() -> str:
    """``on``, ``off`` or ``eager``, from ``CONVODEX_ACCELERATORS`` (default on)."""
    raw = os.environ.get(config.ACCELERATORS_ENV, "").strip().lower()
    if not raw or raw in ON_VALUES:
        return "on"
    if raw in OFF_VALUES:
        return "off"
    if raw == EAGER:
        return EAGER
    raise ConfigError(f"{config.ACCELERATORS_ENV} must be on, off or eager")
