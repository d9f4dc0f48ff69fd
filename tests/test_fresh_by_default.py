"""Fresh by default (SPEC L17): a CLI search first brings in transcripts that changed
or appeared since the last index, within a small time budget, or says on stderr in one
line how many recent sessions may be missing; ``--no-refresh`` skips the check.

Through the real CLI on real files: a session appended to, a new session beside known
ones, a new session in a new directory (Codex writes one a day), and a budget too
small to bring anything in.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from helpers import CliRun, append_lines, as_json, hits, write_codex_rollout, write_session


def test_a_search_brings_in_what_changed_since_the_last_index(root: Path, cli: CliRun) -> None:
    old = write_session(root, "old", [{"role": "user", "content": "the walrus plan"}])
    as_json(cli("index", "--root", str(root), "--json"))
    append_lines(old, [{"role": "assistant", "content": "the heron answer"}])
    write_session(root, "beside", [{"role": "user", "content": "a heron beside it"}])
    write_session(root, "deeper", [{"role": "user", "content": "a heron below"}], subdir="new/dir")

    skipped = cli("search", "heron", "--no-refresh")
    assert skipped.exit_code == 0 and "no hits" in skipped.stdout

    out = cli("search", "heron")
    assert out.exit_code == 0, out.output
    assert out.stderr == ""
    found = {h["sessionId"] for h in hits(cli, "heron", "--no-refresh")}
    assert found == {"old", "beside", "deeper"}


def test_a_new_codex_day_is_found(tmp_path: Path, cli: CliRun) -> None:
    codex = tmp_path / "codex"
    now = int(time.time() * 1000)
    write_codex_rollout(codex, "x1", "/w", [("user", "first day", now)])
    as_json(cli("index", "--root", f"{codex}:codex", "--json"))
    day = codex / "2026" / "11" / "02"
    day.mkdir(parents=True)
    first = next((codex / "2026" / "11" / "01").iterdir())
    (day / first.name.replace("x1", "x2")).write_text(
        first.read_text("utf-8").replace("x1", "x2").replace("first day", "second day"), "utf-8"
    )
    assert {h["sessionId"] for h in hits(cli, "second day")} == {"x2"}


def test_over_budget_it_says_how_many_may_be_missing(root: Path, cli: CliRun) -> None:
    write_session(root, "old", [{"role": "user", "content": "the walrus plan"}])
    as_json(cli("index", "--root", str(root), "--json"))
    for n in range(3):
        write_session(root, f"new{n}", [{"role": "user", "content": f"heron {n}"}])
    os.environ["CONVODEX_REFRESH_BUDGET_MS"] = "1"
    try:
        out = cli("search", "heron", "--color", "never")
    finally:
        del os.environ["CONVODEX_REFRESH_BUDGET_MS"]
    assert out.exit_code == 0, out.output
    lines = out.stderr.splitlines()
    assert len(lines) == 1  # whatever the clock let in: one line saying what to do
    assert "recent session" in lines[0] and "may be missing" in lines[0]
    assert "--wait" in lines[0] and "convodex index" in lines[0]
    # A search with --wait brings every one in.
    assert len(hits(cli, "heron", "--wait", "--root", str(root))) == 3


def test_a_catalog_another_process_writes_answers_and_says_why(
    root: Path, cache_dir: Path, cli: CliRun
) -> None:
    """Counted exactly: while another process holds the write lock nothing can be
    brought in, every new session is named missing, and the search does not wait."""
    write_session(root, "old", [{"role": "user", "content": "the heron plan"}])
    as_json(cli("index", "--root", str(root), "--json"))
    for n in range(3):
        write_session(root, f"new{n}", [{"role": "user", "content": f"heron {n}"}])
    with holding_the_write_lock(cache_dir):
        out = cli("search", "heron", "--color", "never")
    assert out.exit_code == 0, out.output
    assert "the heron plan" in out.stdout  # answered from what the catalog holds
    assert out.stderr.splitlines() == [
        "3 recent sessions may be missing (the catalog could not be refreshed: another "
        "process is writing the catalog): search with --wait, or run `convodex index`"
    ]


@contextlib.contextmanager
def holding_the_write_lock(cache_dir: Path) -> Iterator[None]:
    """Another process that holds the catalog's write lock until told to let go."""
    (catalog,) = cache_dir.rglob("*.sqlite")
    code = (
        "import sqlite3, sys\n"
        f"db = sqlite3.connect({str(catalog)!r}, isolation_level=None)\n"
        "db.execute('BEGIN IMMEDIATE')\n"
        "print('locked', flush=True)\n"
        "sys.stdin.readline()\n"
        "db.execute('ROLLBACK')\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        yield
    finally:
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()


def test_formats_with_their_own_stat_are_the_ones_fingerprinted_by_their_reader() -> None:
    """``registry.OWN_STAT`` names exactly the formats that override ``stat``: the
    freshness check stats every other source without importing its reader."""
    from convodex.sources.base import SourceFormat
    from convodex.sources.registry import FORMATS, OWN_STAT

    own = {name for name in FORMATS if type(FORMATS[name]).stat is not SourceFormat.stat}
    assert own == OWN_STAT
