"""The effective branch of a transcript whose records point at their parents.

Claude Code, Qwen Code, Pi and Factory Droid write a tree into one file (a rewind,
an edit or a fork adds children to an earlier record). Each format picks its leaf
and says what a record's parent is (its own rules for missing or late parents);
the walk up from the leaf is shared.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Protocol, TypeVar

K = TypeVar("K", bound=Hashable)


class Linked(Protocol):
    """A record that names its parent by key (``None`` for a root)."""

    @property
    def parent(self) -> str | None: ...


def walk_back(leaf: K | None, parent_of: Callable[[K], K | None]) -> list[K]:
    """The chain from the root down to ``leaf``.

    ``parent_of`` answers ``None`` for a root or a parent the file does not hold;
    the walk also stops at a cycle, so a corrupt file yields a partial chain.
    """
    chain: list[K] = []
    seen: set[K] = set()
    node = leaf
    while node is not None and node not in seen:
        seen.add(node)
        chain.append(node)
        node = parent_of(node)
    chain.reverse()
    return chain


def chain_to(nodes: Mapping[str, Linked], leaf: str | None) -> list[str]:
    """The chain from the root down to ``leaf``; a parent the file does not hold ends it."""

    def parent_of(key: str) -> str | None:
        up = nodes[key].parent
        return up if up is not None and up in nodes else None

    return walk_back(leaf, parent_of)
