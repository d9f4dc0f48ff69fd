"""The index helper process (``Indexer._read``): this process reads the newest small
sources while the helper starts, the helper reads the rest, and the catalog is the
one a single process builds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import corpus
from convodex.catalog.db import open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.speed import helper as helper_module
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing
from fault_injection import QUERIES, snapshot

# A helper on any run, even on one CPU (the catalog must not change).
HELPED = Accelerators(helper_process=True)


def test_the_helper_and_this_process_build_the_single_process_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(corpus.cached("native", 32, 5).out)
    heads: list[set[int]] = []
    original = helper_module._head

    def head(*args: object) -> set[int]:
        picked = original(*args)  # type: ignore[arg-type]
        heads.append(picked)
        return picked

    monkeypatch.setattr(helper_module, "_head", head)
    with open_catalog(tmp_path / "two") as catalog:
        two = Indexer(catalog, speed=Wing(HELPED)).run([root])
    with open_catalog(tmp_path / "one") as catalog:
        one = Indexer(catalog).run([root])
    assert len(heads) == 1 and heads[0]  # the helper ran, and this process read a head
    assert (two.indexed, two.failed, two.messages, two.documents) == (
        one.indexed,
        0,
        one.messages,
        one.documents,
    )
    assert snapshot(tmp_path / "two", QUERIES) == snapshot(tmp_path / "one", QUERIES)


def test_while_the_helper_is_the_slower_half_this_process_reads_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whenever the next source is not delivered, this process claims the next small
    one and reads it itself; each source is read once, and the catalog (rowids, so tie
    order, included) is the one a single process builds."""
    import helpers
    from convodex.catalog.speed import helper as batches

    monkeypatch.setattr(helper_module, "read_in_helper", helpers.slow_helper)
    root = Path(corpus.cached("native", 32, 5).out)
    mine: list[int] = []
    claim = batches.Claims.claim

    def recorded(self: batches.Claims, count: int, allow: Any = None) -> int | None:
        place = claim(self, count, allow)
        if place is not None:
            mine.append(place)
        return place

    monkeypatch.setattr(batches.Claims, "claim", recorded)
    heads: list[set[int]] = []
    original = helper_module._head

    def head(*args: Any) -> set[int]:
        heads.append(original(*args))
        return heads[-1]

    monkeypatch.setattr(helper_module, "_head", head)
    with open_catalog(tmp_path / "two") as catalog:
        two = Indexer(catalog, speed=Wing(HELPED)).run([root])
    with open_catalog(tmp_path / "one") as catalog:
        one = Indexer(catalog).run([root])
    assert mine and len(set(mine)) == len(mine)  # this process claimed, each once
    assert len(heads) == 1 and len(heads[0]) + len(mine) < two.indexed  # and the helper
    assert (two.indexed, two.failed, two.messages, two.documents) == (
        one.indexed,
        0,
        one.messages,
        one.documents,
    )
    assert snapshot(tmp_path / "two", QUERIES) == snapshot(tmp_path / "one", QUERIES)
