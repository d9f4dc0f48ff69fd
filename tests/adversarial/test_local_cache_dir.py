"""Issue 12, item 17 (SPEC L8): a cache directory that is a file means an in-memory
catalog, whether it comes from ``--cache-dir`` or ``CONVODEX_CACHE_HOME``.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers import write_session
from local_faults import convodex, hit_paths, no_traceback, ok_json


def test_a_file_as_cache_dir_falls_back_to_memory_both_ways(tmp_path: Path, root: Path) -> None:
    write_session(root, "s1", [{"role": "user", "content": "walrus in memory"}])
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be", "utf-8")
    by_env = {**os.environ, "CONVODEX_CACHE_HOME": str(blocker)}
    for cache_args, env in (
        (("--cache-dir", str(blocker)), None),
        ((), by_env),
        (("--cache-dir", str(blocker / "below")), None),
    ):
        roots = ("--root", str(root), *cache_args)
        report = ok_json(convodex("index", "--json", *roots, env=env))
        assert report["progress"]["state"] == "complete"
        found = ok_json(convodex("search", "walrus", "--wait", "--json", *roots, env=env))
        assert hit_paths(found) == {"s1.jsonl"}
        doctor = ok_json(convodex("doctor", "catalogs", "--json", *cache_args, env=env))
        assert doctor["catalogs"][0]["mode"] == "memory"
        # A rebuild has no file to replace: refused the same way, in one line.
        reindex = ("catalogs", "reindex", "history", "--dir", str(root))
        rebuilt = convodex(*reindex, *cache_args, env=env)
        no_traceback(rebuilt)
        assert rebuilt.returncode == 1
        assert rebuilt.stderr == (
            "error: cannot rebuild the catalog on disk: "
            "the cache directory path is not a directory\n"
        )
    assert blocker.read_text("utf-8") == "a file where the cache directory should be"
