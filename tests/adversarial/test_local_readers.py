"""Read-only when it must be, and readers never block each other (SPEC L17, issue 24
items 11 and 12), with real processes.

A search on a catalog it cannot write (a full disk) answers from what is there and
says in one line why it could not refresh; many ``convodex search`` processes at once,
beside an ``index`` writing, all answer: only writers wait, and a search never waits
for a write.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from convodex.config import catalog_path
from helpers import write_session
from local_faults import convodex, hit_paths, limited, ok_json, read_only_file_system, words

SEARCHES = 8


def test_a_search_on_a_full_disk_answers_and_says_why(tmp_path: Path, root: Path) -> None:
    cache = tmp_path / "cache"
    write_session(root, "first", [{"role": "user", "content": "walrus before the disk filled"}])
    args = ("--root", str(root), "--cache-dir", str(cache))
    ok_json(convodex("index", "--json", *args))
    size = catalog_path(cache).stat().st_size
    for n in range(20):
        write_session(root, f"bulk{n:02}", [{"role": "user", "content": words(n)}] * 5)
    full = limited(size + 16 * 1024)
    assert convodex("index", *args, prelude=full).returncode == 1  # the disk is full
    # The disk is still full: the search answers from the catalog as it is.
    # (A budget no loaded machine runs out of: the disk, not the clock, stops it.)
    env = dict(os.environ, CONVODEX_REFRESH_BUDGET_MS="120000")
    found = convodex("search", "walrus", "--json", *args, prelude=full, env=env)
    assert found.returncode == 0, found.stderr
    assert hit_paths(json.loads(found.stdout)) == {"first.jsonl"}
    (note,) = found.stderr.splitlines()
    assert "20 recent sessions may be missing" in note and "could not be refreshed: " in note
    assert "full" in note
    assert "Traceback" not in found.stderr


def test_a_search_on_a_read_only_file_system_answers_and_says_why(
    tmp_path: Path, root: Path
) -> None:
    """The cache on a file system mounted read-only: before, the catalog was set aside
    for an empty one in memory, and the search said ``no hits`` and "the index is
    empty"."""
    cache = tmp_path / "cache"
    write_session(root, "first", [{"role": "user", "content": "walrus before the remount"}])
    args = ("--root", str(root), "--cache-dir", str(cache))
    ok_json(convodex("index", "--json", *args))
    for n in range(3):
        write_session(root, f"new{n}", [{"role": "user", "content": f"walrus {n} after it"}])
    within = read_only_file_system(cache)
    # A budget no loaded machine runs out of: the read-only file system, not the
    # clock, is what stops the refresh.
    env = dict(os.environ, CONVODEX_REFRESH_BUDGET_MS="120000")
    found = convodex("search", "walrus", "--json", *args, within=within, env=env)
    assert found.returncode == 0, found.stderr
    assert hit_paths(json.loads(found.stdout)) == {"first.jsonl"}
    assert "Traceback" not in found.stderr
    (note,) = [line for line in found.stderr.splitlines() if "may be missing" in line]
    assert note.startswith("3 recent sessions may be missing (the catalog could not be refreshed")
    assert "read-only" in note and "not writable" in note
    listed = convodex("recent", "--json", *args, within=within)
    assert listed.returncode == 0, listed.stderr
    assert [s["sessionId"] for s in json.loads(listed.stdout)["sessions"]] == ["first"]
    doctor = convodex("doctor", "catalogs", "--cache-dir", str(cache), within=within)
    assert doctor.returncode == 0 and "mode: degraded" in doctor.stdout, doctor.stdout
    assert "integrity: ok" in doctor.stdout and "1 ok" in doctor.stdout
    # An index there says why it cannot write, in one line, and changes nothing.
    refused = convodex("index", *args, within=within)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "read-only" in refused.stderr and "not writable" in refused.stderr
    assert hit_paths(ok_json(convodex("search", "walrus", "--json", "--no-refresh", *args))) == {
        "first.jsonl"
    }


def test_many_searches_at_once_all_answer_beside_a_writer(tmp_path: Path, root: Path) -> None:
    cache = tmp_path / "cache"
    for n in range(30):
        write_session(root, f"s{n:02}", [{"role": "user", "content": f"walrus {words(n)}"}])
    args = ("--root", str(root), "--cache-dir", str(cache))
    ok_json(convodex("index", "--json", *args))
    for n in range(30, 60):  # work for a writer, and for each search's refresh
        write_session(root, f"s{n:02}", [{"role": "user", "content": f"walrus {words(n)}"}])
    code = "import sys\nfrom convodex.cli.main import main\nsys.argv[0] = 'convodex'\nmain()"
    commands = [("index", "--json")] + [("search", "walrus", "--json", "--limit", "5")] * SEARCHES
    started = [
        (
            command[0],
            subprocess.Popen(
                [sys.executable, "-c", code, *command, *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
        for command in commands
    ]
    for name, child in started:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, (name, err)
        assert "locked" not in err and "Traceback" not in err, err
        if name == "search":
            assert len(json.loads(out)["hits"]) == 5
