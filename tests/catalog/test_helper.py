"""The index helper process (``Indexer._read``): this process reads the newest small
sources while the helper starts, the helper reads the rest, and the catalog is the
one a single process builds."""

from __future__ import annotations

from pathlib import Path

import pytest

import corpus
from convodex.catalog import indexer as indexer_module
from convodex.catalog.db import open_catalog
from convodex.catalog.indexer import Indexer
from fault_injection import QUERIES, snapshot


def test_the_helper_and_this_process_build_the_single_process_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexer_module, "usable_cpus", lambda: 2)  # a helper, even on one
    root = Path(corpus.cached("native", 32, 5).out)
    heads: list[set[int]] = []
    original = indexer_module._head

    def head(*args: object) -> set[int]:
        picked = original(*args)  # type: ignore[arg-type]
        heads.append(picked)
        return picked

    monkeypatch.setattr(indexer_module, "_head", head)
    with open_catalog(tmp_path / "two") as catalog:
        two = Indexer(catalog).run([root])
    with open_catalog(tmp_path / "one") as catalog:
        one = Indexer(catalog, helper_process=False).run([root])
    assert len(heads) == 1 and heads[0]  # the helper ran, and this process read a head
    assert (two.indexed, two.failed, two.messages, two.documents) == (
        one.indexed,
        0,
        one.messages,
        one.documents,
    )
    assert snapshot(tmp_path / "two", QUERIES) == snapshot(tmp_path / "one", QUERIES)
