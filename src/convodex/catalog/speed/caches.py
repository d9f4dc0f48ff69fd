"""Kept results: each one is recomputed exactly when it is not kept, so keeping it
changes nothing but time.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from convodex.models import Progress

if TYPE_CHECKING:
    from convodex.catalog.db import Catalog
    from convodex.catalog.rowids import Candidate

# Ordered candidate lists kept for paging on (per catalog revision), and the most
# candidates one list holds: paging through a common word costs one ordering, not one
# per page, so walking every hit is proportional to the hits.
RANKED_LISTS = 8
RANKED_MAX = 2_000_000
TITLES_KEPT = 4096


class RankedLists:
    """A few complete, ordered candidate lists, by catalog revision, plan and table."""

    def __init__(self) -> None:
        self._lists: OrderedDict[tuple[object, ...], list[Candidate]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...]) -> list[Candidate] | None:
        with self._lock:
            found = self._lists.get(key)
            if found is not None:
                self._lists.move_to_end(key)
            return found

    def put(self, key: tuple[object, ...], candidates: list[Candidate]) -> None:
        if len(candidates) > RANKED_MAX:
            return
        with self._lock:
            self._lists[key] = candidates
            while len(self._lists) > RANKED_LISTS:
                self._lists.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._lists.clear()


class TitleCache:
    """Each session file's title, kept while the file's identity holds.

    A warm process (serve, MCP, the picker) reads a file's title (its format's own, or
    its first user message) once, not once per search: on a common word's page of 50
    hits from 49 sessions, a third of the messages read were titles.
    """

    def __init__(self, keep: int = TITLES_KEPT) -> None:
        self._keep = keep
        self._entries: OrderedDict[tuple[str, int, int], str | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self, path: str, size: int, mtime_ns: int, read: Callable[[], str | None]
    ) -> str | None:
        key = (path, size, mtime_ns)
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        title = read()
        with self._lock:
            self._entries[key] = title
            while len(self._entries) > self._keep:
                self._entries.popitem(last=False)
        return title


class ProgressKept:
    """The last progress each connection computed, and what it was computed for: kept
    until anything is committed (the stamp says so), forgotten with the connection."""

    def __init__(self) -> None:
        self._kept: weakref.WeakKeyDictionary[Catalog, tuple[tuple[object, ...], Progress]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def get(
        self, catalog: Catalog, stamp: tuple[object, ...], count: Callable[[], Progress]
    ) -> Progress:
        with self._lock:
            kept = self._kept.get(catalog)
        if kept is not None and kept[0] == stamp:
            return msgspec.structs.replace(kept[1])
        counted = count()
        with self._lock:
            self._kept[catalog] = (stamp, counted)
        return msgspec.structs.replace(counted)
