"""Integrity checks where they belong (SPEC L8, L20): a no-op ``index`` reads no page it
does not need, and damage is still found: by ``doctor``, at the open after a writer
died with the catalog open, for a file never checked, and on the periodic schedule."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

from convodex.catalog import shutdown
from convodex.catalog.db import Catalog, open_catalog
from convodex.catalog.indexer import Indexer
from convodex.config import catalog_path
from fault_injection import damage
from helpers import write_session
from local_faults import convodex, ok_json


def indexed(root: Path, cache: Path) -> Path:
    for n in range(40):
        text = " ".join(f"word{n}x{i} the migration of orders" for i in range(200))
        write_session(root, f"session-{n:04d}", [{"role": "user", "content": text}])
    ok_json(convodex("index", "--json", "--root", str(root), "--cache-dir", str(cache)))
    return catalog_path(cache)


def checks_of(catalog: Catalog) -> list[str]:
    """The integrity checks this connection runs from now on."""
    seen: list[str] = []
    catalog.db.set_trace_callback(
        lambda sql: seen.append(sql) if "quick_check" in sql or "integrity_check" in sql else None
    )
    return seen


def crash_with_it_open(cache: Path) -> None:
    """Another process opens the catalog for writing and dies without closing it."""
    code = (
        "import os, sys\n"
        "from convodex.catalog.db import open_catalog\n"
        "open_catalog(sys.argv[1], check=False)\n"
        "os._exit(9)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(cache)], check=False, timeout=60)
    assert done.returncode == 9


def test_a_no_op_index_runs_no_integrity_check(root: Path, cache_dir: Path) -> None:
    indexed(root, cache_dir)
    with open_catalog(cache_dir, check=False) as catalog:  # as a file over the open's size
        seen = checks_of(catalog)
        stats = Indexer(catalog).run([root])
        assert stats.indexed == 0 and stats.sources == 40
        assert seen == []


def test_the_open_after_a_crash_checks_and_finds_damage(root: Path, cache_dir: Path) -> None:
    path = indexed(root, cache_dir)
    crash_with_it_open(cache_dir)
    assert shutdown.check_due(path) == "an unclean shutdown"
    damage(path, random.Random(3), 3)
    with open_catalog(cache_dir, check=False) as catalog:
        assert catalog.quarantined is not None  # moved aside, a new one in its place
        assert "damaged catalog was moved aside" in (catalog.note or "")
    assert shutdown.check_due(path) is None  # the new file is sound and stamped


def test_the_open_after_a_crash_checks_once(root: Path, cache_dir: Path) -> None:
    path = indexed(root, cache_dir)
    crash_with_it_open(cache_dir)
    with open_catalog(cache_dir, check=False) as catalog:
        assert catalog.quarantined is None and catalog.checked
    assert shutdown.check_due(path) is None  # the dead writer's mark is gone
    with open_catalog(cache_dir, check=False) as catalog:
        seen = checks_of(catalog)
        Indexer(catalog).run([root])
        assert seen == []


def test_doctor_finds_damage_a_no_op_never_reads(root: Path, cache_dir: Path) -> None:
    path = indexed(root, cache_dir)
    damage(path, random.Random(5), 3)
    doctor = ok_json(convodex("doctor", "catalogs", "--json", "--cache-dir", str(cache_dir)))
    assert doctor["catalogs"][0]["integrity"] in ("failed", "unreadable")


def test_a_file_never_checked_or_replaced_is_checked_first(root: Path, cache_dir: Path) -> None:
    path = indexed(root, cache_dir)
    os.unlink(
        path.parent.with_name("history-search.state") / "v1.sqlite.checked"
    )  # e.g. a catalog of an older build, or copied in
    with open_catalog(cache_dir, check=False) as catalog:
        seen = checks_of(catalog)
        Indexer(catalog).run([root])
        assert seen == ["PRAGMA quick_check"]
    replacement = path.with_name("copy.sqlite")
    replacement.write_bytes(path.read_bytes())
    os.replace(replacement, path)
    assert shutdown.check_due(path) == "replaced since its last check"


def test_the_periodic_check_comes_due(root: Path, cache_dir: Path) -> None:
    path = indexed(root, cache_dir)
    assert shutdown.check_due(path) is None
    old = time.time() - shutdown.CHECK_EVERY_SECONDS - 60
    os.utime(path.parent.with_name("history-search.state") / "v1.sqlite.checked", (old, old))
    assert shutdown.check_due(path) == "its periodic check"
    with open_catalog(cache_dir, check=False) as catalog:
        seen = checks_of(catalog)
        Indexer(catalog).run([root])
        assert seen == ["PRAGMA quick_check"]
    assert shutdown.check_due(path) is None
