"""Issue 12, item 8: a full disk during ``convodex index`` is one ``error:`` line, exit 1,
and the catalog stays as it was.

The disk is made full for real and without privileges: the index process runs with
``RLIMIT_FSIZE`` (the largest file it may write) a little above the catalog's size,
so SQLite's next write to the catalog or its WAL comes up short, as on a full disk.
"""

from __future__ import annotations

import json
from pathlib import Path

from convodex.config import catalog_path
from helpers import write_session
from local_faults import convodex, hit_paths, integrity, limited, ok_json, words

SESSIONS = 40


def test_disk_full_is_one_error_line_and_the_catalog_is_intact(tmp_path: Path, root: Path) -> None:
    cache = tmp_path / "cache"
    write_session(root, "first", [{"role": "user", "content": "walrus before the disk filled"}])
    args = ("--root", str(root), "--cache-dir", str(cache))
    ok_json(convodex("index", "--json", *args))
    size = catalog_path(cache).stat().st_size

    for n in range(SESSIONS):
        write_session(root, f"bulk{n:02}", [{"role": "user", "content": words(n)}] * 5)
    full = convodex("index", *args, prelude=limited(size + 64 * 1024))
    assert full.returncode == 1, (full.stdout, full.stderr)
    assert full.stderr.count("\n") == 1 and full.stderr.startswith("error: "), full.stderr
    assert "full" in full.stderr and "Traceback" not in full.stderr
    assert integrity(cache) == "ok"
    found = ok_json(convodex("search", "walrus", "--json", *args))
    assert hit_paths(found) == {"first.jsonl"}

    # With room again, the same index finishes what the full disk interrupted.
    report = ok_json(convodex("index", "--json", *args))
    assert report["progress"]["state"] == "complete"
    found = ok_json(convodex("search", "token7x3", "--json", *args))
    assert hit_paths(found) == {"bulk07.jsonl"}
    assert json.loads(convodex("search", "walrus", "--json", *args).stdout)["hits"]
