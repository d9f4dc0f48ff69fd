"""Replay budgets (SPEC L6) and failure isolation (L5) on real files.

Every budget passes exactly at its limit and fails one byte over; a failure marks
only that source failed, keeps its old rows out of results and leaves its files
unchanged, while every other source indexes normally.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import convodex
from convodex.catalog.db import Catalog
from convodex.catalog.indexer import Indexer
from convodex.errors import SessionReplayLimitError
from convodex.sources.base import Budget, ReadResult
from convodex.sources.session_log import FORMAT
from helpers import CliRun, append_lines, search, tree_hashes, write_session

BIG = 1 << 30


def line(role: str, content: str) -> bytes:
    return (json.dumps({"role": role, "content": content}) + "\n").encode()


def exact_line(size: int, word: str = "alpha") -> bytes:
    """A user record whose line (newline included) is exactly ``size`` bytes."""
    raw = line("user", word + " ")
    return line("user", word + " " + "x" * (size - len(raw)))


def health(catalog: Catalog) -> dict[str, tuple[str, str | None]]:
    return {
        Path(p).name: (h, e)
        for p, h, e in catalog.db.execute("SELECT path, health, error_class FROM sources")
    }


def hit_names(catalog: Catalog, query: str) -> set[str]:
    result = search(catalog, query, limit=200)
    return {Path(h["sessionPath"]).name for h in result["hits"]}


def budget(**limits: int) -> Budget:
    values = {
        "max_log_bytes": BIG,
        "max_record_bytes": BIG,
        "max_retained_bytes": BIG,
        "max_dag_meta_bytes": BIG,
    }
    values.update(limits)
    return Budget(**values)


def test_budget_is_exported_and_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert convodex.Budget is Budget
    assert convodex.SessionReplayLimitError is SessionReplayLimitError
    defaults = Budget()
    assert (defaults.max_log_bytes, defaults.max_record_bytes) == (512 << 20, 64 << 20)
    assert (defaults.max_retained_bytes, defaults.max_dag_meta_bytes) == (64 << 20, 64 << 20)
    for env, attr in [
        ("CONVODEX_REPLAY_MAX_LOG_BYTES", "max_log_bytes"),
        ("CONVODEX_REPLAY_MAX_RECORD_BYTES", "max_record_bytes"),
        ("CONVODEX_REPLAY_MAX_RETAINED_BYTES", "max_retained_bytes"),
        ("CONVODEX_REPLAY_MAX_DAG_META_BYTES", "max_dag_meta_bytes"),
    ]:
        monkeypatch.setenv(env, "1234")
        assert getattr(Budget(), attr) == 1234
        assert getattr(Budget(**{attr: 99}), attr) == 99  # the Python API wins
        monkeypatch.setenv(env, "lots")
        with pytest.raises(ValueError, match=env):
            Budget()
        monkeypatch.delenv(env)
    with pytest.raises(ValueError):
        Budget(max_record_bytes=0)


@pytest.mark.parametrize("resource", ["log", "record"])
def test_reader_budget_passes_at_the_limit_and_fails_one_byte_over(
    root: Path, resource: str
) -> None:
    path = root / "s.jsonl"
    path.write_bytes(line("assistant", "hi") + exact_line(300) + line("user", "bye"))
    size = path.stat().st_size if resource == "log" else 300
    at_limit = budget(**{f"max_{resource}_bytes": size})
    messages = list(FORMAT.read(path, ReadResult(0, 0), at_limit))
    assert len(messages) == 3
    over = budget(**{f"max_{resource}_bytes": size - 1})
    before = path.read_bytes()
    with pytest.raises(SessionReplayLimitError) as caught:
        list(FORMAT.read(path, ReadResult(0, 0), over))
    err = caught.value
    assert (err.resource, err.observed, err.limit) == (resource, size, size - 1)
    assert err.path == str(path)
    assert "the session files were left unchanged" in str(err)
    assert path.read_bytes() == before


def test_an_oversized_record_is_measured_without_being_held(root: Path) -> None:
    path = root / "s.jsonl"
    path.write_bytes(line("user", "a") + exact_line(5_000_000) + line("user", "b"))
    with pytest.raises(SessionReplayLimitError) as caught:
        list(FORMAT.read(path, ReadResult(0, 0), budget(max_record_bytes=4096)))
    assert caught.value.observed == 5_000_000  # the whole line, read in chunks
    # A half-written oversized last line is over the budget all the same.
    tail = root / "t.jsonl"
    tail.write_bytes(line("user", "a") + exact_line(9000)[:-1])
    with pytest.raises(SessionReplayLimitError) as caught:
        list(FORMAT.read(tail, ReadResult(0, 0), budget(max_record_bytes=8000)))
    assert caught.value.observed == 8999


@pytest.mark.parametrize("resource", ["log", "record", "retained"])
def test_indexer_budget_at_limit_indexes_and_over_fails_only_that_source(
    root: Path, catalog: Catalog, resource: str
) -> None:
    healthy = write_session(root, "healthy", [{"role": "user", "content": "alpha fine"}])
    path = root / "edge.jsonl"
    path.write_bytes(exact_line(500) + line("user", "alpha two"))
    sizes = {"log": path.stat().st_size, "record": 500, "retained": 500}
    size = sizes[resource]
    # Keep the other budgets out of the way but the healthy source inside this one.
    assert healthy.stat().st_size <= size
    Indexer(catalog, budget=budget(**{f"max_{resource}_bytes": size})).run([root])
    assert health(catalog)["edge.jsonl"] == ("ok", None)
    assert hit_names(catalog, "alpha") == {"healthy.jsonl", "edge.jsonl"}

    copy = root / "edge.tmp"
    copy.write_bytes(path.read_bytes())
    os.replace(copy, path)  # same bytes, new inode: a rebuild...
    hashes = tree_hashes(root)
    stats = Indexer(catalog, budget=budget(**{f"max_{resource}_bytes": size - 1})).run([root])
    assert stats.errors == {"SessionReplayLimitError": 1}
    assert health(catalog)["edge.jsonl"] == ("failed", "SessionReplayLimitError")
    assert health(catalog)["healthy.jsonl"] == ("ok", None)
    # ...and the old rows are gone: no fallback to the older checkpoint.
    assert hit_names(catalog, "alpha") == {"healthy.jsonl"}
    assert tree_hashes(root) == hashes


def test_retained_budget_commits_before_it_would_go_over(root: Path, catalog: Catalog) -> None:
    path = root / "s.jsonl"
    records = [exact_line(200, f"word{i}") for i in range(5)]
    path.write_bytes(b"".join(records))
    Indexer(catalog, budget=budget(max_retained_bytes=450)).run([root])
    spans = catalog.db.execute(
        "SELECT first_index, count FROM spans ORDER BY first_index"
    ).fetchall()
    assert spans == [(0, 2), (2, 2), (4, 1)]  # never more than 450 bytes held at once
    row = catalog.db.execute("SELECT health, message_count, byte_offset FROM sources").fetchone()
    assert row == ("ok", 5, path.stat().st_size)
    for i in range(5):
        assert hit_names(catalog, f"word{i}") == {"s.jsonl"}


def test_dag_metadata_meter_is_exact(tmp_path: Path) -> None:
    meter = budget(max_dag_meta_bytes=100).meter(tmp_path / "legacy.jsonl", "dag_meta")
    meter.add(60)
    meter.add(40)  # exactly at the limit
    with pytest.raises(SessionReplayLimitError) as caught:
        meter.add(1)
    assert (caught.value.resource, caught.value.observed, caught.value.limit) == (
        "dag_meta",
        101,
        100,
    )
    meter.release(50)
    meter.add(50)
    assert meter.used == 100


def test_env_budget_applies_to_the_cli(
    root: Path, cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_session(root, "small", [{"role": "user", "content": "alpha"}])
    (root / "huge.jsonl").write_bytes(exact_line(3000))
    monkeypatch.setenv("CONVODEX_REPLAY_MAX_RECORD_BYTES", "2999")
    result = cli("index", "--root", str(root), "--json")
    out = json.loads(result.stdout)
    assert out["stats"]["errors"] == {"SessionReplayLimitError": 1}
    assert out["progress"]["failed"] == 1
    monkeypatch.setenv("CONVODEX_REPLAY_MAX_RECORD_BYTES", "3000")
    (root / "huge.jsonl").touch()
    out = json.loads(cli("index", "--root", str(root), "--json").stdout)
    assert out["stats"]["failed"] == 0 and out["progress"]["failed"] == 0
    monkeypatch.setenv("CONVODEX_REPLAY_MAX_RECORD_BYTES", "lots")
    bad = cli("index", "--root", str(root))
    assert bad.exit_code == 1
    assert bad.stderr.strip() == (
        "error: CONVODEX_REPLAY_MAX_RECORD_BYTES must be an integer number of bytes"
    )


# -- failure isolation on real files ---------------------------------------------------


def test_truncated_last_line_waits_for_the_writer(root: Path, catalog: Catalog) -> None:
    path = root / "s.jsonl"
    full = line("user", "alpha one") + line("user", "alpha two")
    half = line("assistant", "alpha three")
    path.write_bytes(full + half[:15])
    Indexer(catalog).run([root])
    row = catalog.db.execute(
        "SELECT health, message_count, byte_offset, line_errors FROM sources"
    ).fetchone()
    assert row == ("ok", 2, len(full), 0)
    with open(path, "ab") as handle:
        handle.write(half[15:])
    stats = Indexer(catalog).run([root])
    assert stats.appended == 1
    count = catalog.db.execute("SELECT message_count FROM sources").fetchone()[0]
    assert count == 3


def test_invalid_utf8_deep_nesting_and_binary_never_hide_healthy_sources(
    root: Path, catalog: Catalog
) -> None:
    deep = "[" * 10_000 + "]" * 10_000
    (root / "mixed.jsonl").write_bytes(
        line("user", "alpha before")
        + b'{"role":"user","content":"caf\xff\xfe bad"}\n'
        + ('{"role":"user","content":' + deep + "}\n").encode()
        + ('{"role":"user","extra":' + deep + ',"content":"x"}\n').encode()
        + (
            '{"role":"assistant","content":"ok","tool_calls":[{"id":"c","name":"bash",'
            '"arguments":' + deep + "}]}\n"
        ).encode()
        + line("user", "alpha after")
    )
    (root / "binary.jsonl").write_bytes(bytes(range(256)) * 64 + b"\x00\n\xff" * 100)
    (root / "directory.jsonl").mkdir()  # not a file: never a source
    write_session(root, "healthy", [{"role": "user", "content": "alpha healthy"}])
    stats = Indexer(catalog).run([root])
    assert stats.failed == 0
    states = health(catalog)
    assert states["mixed.jsonl"][0] == "ok"
    assert states["healthy.jsonl"] == ("ok", None)
    assert "directory.jsonl" not in states
    line_errors = dict(catalog.db.execute("SELECT path, line_errors FROM sources").fetchall())
    assert line_errors[str(root / "mixed.jsonl")] == 4
    assert line_errors[str(root / "binary.jsonl")] > 0
    assert hit_names(catalog, "alpha") == {"mixed.jsonl", "healthy.jsonl"}
    result = search(catalog, "alpha after", limit=5)
    assert [h["messageIndex"] for h in result["hits"]] == [1]  # bad lines are not displayed


def test_unreadable_and_vanished_sources_are_recorded(root: Path, catalog: Catalog) -> None:
    write_session(root, "healthy", [{"role": "user", "content": "alpha"}])
    becomes_dir = write_session(root, "becomes_dir", [{"role": "user", "content": "alpha"}])
    vanishes = write_session(root, "vanishes", [{"role": "user", "content": "alpha"}])
    indexer = Indexer(catalog)
    root_id = indexer.scan_root(root)
    becomes_dir.unlink()
    becomes_dir.mkdir()  # open() now fails with IsADirectoryError
    vanishes.unlink()
    indexer.index_pending([root_id])
    states = health(catalog)
    assert states["becomes_dir.jsonl"] == ("failed", "IsADirectoryError")
    assert states["vanishes.jsonl"] == ("missing", None)
    assert states["healthy.jsonl"] == ("ok", None)
    assert hit_names(catalog, "alpha") == {"healthy.jsonl"}


def test_a_changed_source_is_stale_until_reindexed(root: Path, catalog: Catalog) -> None:
    path = write_session(root, "s1", [{"role": "user", "content": "alpha"}])
    Indexer(catalog).run([root])
    path.write_bytes(line("user", "omega"))  # rewritten behind the indexer's back
    assert search(catalog, "alpha")["hits"] == []  # dropped at hydration...
    assert health(catalog)["s1.jsonl"] == ("stale", None)  # ...and queued
    Indexer(catalog).run([root])
    assert health(catalog)["s1.jsonl"] == ("ok", None)
    assert hit_names(catalog, "omega") == {"s1.jsonl"}


def test_appending_past_a_budget_fails_the_source_and_drops_its_rows(
    root: Path, catalog: Catalog
) -> None:
    path = write_session(root, "grows", [{"role": "user", "content": "alpha early"}])
    write_session(root, "other", [{"role": "user", "content": "alpha other"}])
    Indexer(catalog, budget=budget(max_record_bytes=2000)).run([root])
    assert hit_names(catalog, "alpha") == {"grows.jsonl", "other.jsonl"}
    append_lines(path, [{"role": "user", "content": "alpha " + "y" * 3000}])
    write_session(root, "newcomer", [{"role": "user", "content": "alpha new"}])
    Indexer(catalog, budget=budget(max_record_bytes=2000)).run([root])
    assert health(catalog)["grows.jsonl"] == ("failed", "SessionReplayLimitError")
    assert hit_names(catalog, "alpha") == {"other.jsonl", "newcomer.jsonl"}
