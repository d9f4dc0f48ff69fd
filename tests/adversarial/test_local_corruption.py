"""Issue 12, item 4 (SPEC L8): a damaged catalog of any size is quarantined and rebuilt.

Catalogs over 8 MiB skip the quick check on open, and nothing else recognised damage:
with random pages overwritten, ``search`` printed a "database disk image is
malformed" traceback, ``index`` crashed or reported "complete" over the damage, and
the server answered 500. Now any "malformed" or "not a database" error quarantines the
file and rebuilds it, and the caller gets progress, never a traceback.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

import corpus
from convodex.catalog.db import QUICK_CHECK_MAX_BYTES
from convodex.config import catalog_path
from fault_injection import damage
from helpers import service, tree_hashes
from live_server import serving, wait_for
from local_faults import convodex, integrity, ok_json

QUERIES = ("needle3", "needle41", "the", "error", "迁移")
KINDS = ("--kind", "user_text,assistant_text,tool_input,tool_output,tool_error")
DAMAGED_PAGES = 30  # as in the adversarial run: the open reads none of them


def hits_of(result: dict[str, Any]) -> list[tuple[str, int, int, str]]:
    return sorted(
        (h["sessionPath"], h["messageIndex"], h["partIndex"], h["kind"]) for h in result["hits"]
    )


def searches(cache: Path) -> dict[str, list[tuple[str, int, int, str]]]:
    out = {}
    for query in QUERIES:
        args = ("--json", "--limit", "200", *KINDS, "--cache-dir", str(cache))
        result = ok_json(convodex("search", query, *args))
        out[query] = hits_of(result)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """(corpus, a clean catalog file over the quick-check size, its searches)."""
    root = Path(corpus.cached("native", 32, 5).out)
    clean = tmp_path_factory.mktemp("clean")
    ok_json(convodex("index", "--json", "--root", str(root), "--cache-dir", str(clean)))
    path = catalog_path(clean)
    assert path.stat().st_size > QUICK_CHECK_MAX_BYTES
    return root, path, searches(clean)


def damaged_copy(clean: Path, cache: Path, seed: int) -> Path:
    target = catalog_path(cache)
    target.parent.mkdir(parents=True, mode=0o700)
    shutil.copyfile(clean, target)
    damage(target, random.Random(seed), DAMAGED_PAGES)
    return target


@pytest.mark.slow
def test_cli_quarantines_and_rebuilds_a_large_damaged_catalog(
    built: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    root, clean, expected = built
    hashes = tree_hashes(root)
    cache = tmp_path / "cache"
    damaged_copy(clean, cache, seed=1)

    doctor = ok_json(convodex("doctor", "catalogs", "--json", "--cache-dir", str(cache)))
    assert doctor["catalogs"][0]["integrity"] in ("failed", "unreadable")

    found = ok_json(convodex("search", "needle3", "--json", "--cache-dir", str(cache)))
    assert found["progress"]["state"] in ("empty", "indexing", "complete")

    report = ok_json(convodex("index", "--json", "--root", str(root), "--cache-dir", str(cache)))
    assert report["progress"]["state"] == "complete" and report["progress"]["failed"] == 0
    assert integrity(cache) == "ok"
    doctor = ok_json(convodex("doctor", "catalogs", "--json", "--cache-dir", str(cache)))
    assert doctor["catalogs"][0]["integrity"] == "ok"
    assert len(doctor["catalogs"][0]["quarantined"]) == 1
    assert searches(cache) == expected
    assert tree_hashes(root) == hashes


@pytest.mark.slow
def test_serve_rebuilds_a_large_damaged_catalog(
    built: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    root, clean, expected = built
    cache = tmp_path / "cache"
    damaged_copy(clean, cache, seed=2)
    with serving(service(cache, [root])) as client:
        first = client.get("/search", params={"q": "needle3"})
        assert first.status_code == 200 and "progress" in first.json(), first.text
        assert client.get("/tree", params={"progressive": 1}).status_code == 200

        def rebuilt() -> bool:
            page = client.get("/search", params={"q": "needle3", "limit": 200}).json()
            return page["progress"]["state"] == "complete" and hits_of(page) == [
                h for h in expected["needle3"] if h[3] != "tool_output"
            ]

        wait_for(rebuilt, timeout=120)
    assert integrity(cache) == "ok"
    assert searches(cache) == expected
