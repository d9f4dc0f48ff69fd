"""Format drift: record and content-block types a reader meets and does not know.

Agents add shapes without notice; a reader that skipped them silently would lose
words with nobody the wiser. Readers report each unknown type name here
(``note``), the indexer counts them per source (``counting``: into the read's
``ReadResult.unknown``), and ``convodex doctor catalogs`` shows the counts, so the
next new shape is found by a user's doctor, not by a missing search hit.

Only type names are kept (schema, not content), and only names that look like
one: anything else is counted as ``?``. Unknown blocks keep their text (the
reader indexes it); unknown records are at least counted.

The names are met deep inside a reader's message building (``content.Parts``),
far from the read's result, so the indexer sets where they go around each step of
a read, never across one: outside a read (a hit loaded for its snippet) nothing
is counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

RECORD = "record"
BLOCK = "block"
# What a type name looks like; longer or other names are counted as "?" (never shown).
_NAME = re.compile(r"[A-Za-z0-9_.:/$-]{1,64}")

_sink: ContextVar[dict[str, int] | None] = ContextVar("convodex_drift", default=None)


def key(kind: str, name: object) -> str:
    """The counter's key: ``record:<name>`` or ``block:<name>``."""
    shown = name if isinstance(name, str) and _NAME.fullmatch(name) else "?"
    return f"{kind}:{shown}"


def note(kind: str, name: object) -> None:
    """Count one unknown ``kind`` (``RECORD`` or ``BLOCK``) named ``name`` in the read
    under way, if any."""
    sink = _sink.get()
    if sink is not None:
        found = key(kind, name)
        sink[found] = sink.get(found, 0) + 1


def counting(items: Iterator[T], into: dict[str, int]) -> Iterator[T]:
    """``items`` (a reader's messages), each step run with ``into`` as the counter."""
    while True:
        token = _sink.set(into)
        try:
            item = next(items)
        except StopIteration:
            return
        finally:
            _sink.reset(token)
        yield item
