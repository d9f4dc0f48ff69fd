"""Incremental indexing (SPEC L5) on real files: checkpoints, appends, rewrites, vanishing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from convodex.catalog.db import Catalog, open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.rowids import SLOT_SHIFT
from convodex.catalog.stamps import signature
from helpers import (
    CliRun,
    append_lines,
    as_json,
    search,
    speed,
    write_codex_rollout,
    write_session,
)

# The behaviours of a run hold with no accelerator and with every one at work (a
# helper process reading each run, bands following each commit).
both_ways = pytest.mark.usefixtures("accelerators")


def convo(word: str, n: int = 3) -> list[dict[str, object]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{word} message {i}"}
        for i in range(n)
    ]


def checkpoint(catalog: Catalog, path: Path) -> dict[str, object]:
    row = catalog.db.execute(
        "SELECT byte_offset, message_count, size, mtime_ns, inode, signature, pending, health "
        "FROM sources WHERE path = ?",
        (str(path),),
    ).fetchone()
    keys = [
        "byte_offset",
        "message_count",
        "size",
        "mtime_ns",
        "inode",
        "signature",
        "pending",
        "health",
    ]
    return dict(zip(keys, row, strict=True))


def hits(catalog: Catalog, query: str) -> list[tuple[str, int]]:
    result = search(catalog, query, limit=200)
    return [(Path(h["sessionPath"]).name, h["messageIndex"]) for h in result["hits"]]


@both_ways
def test_checkpoint_describes_the_indexed_bytes(root: Path, catalog: Catalog) -> None:
    path = write_session(root, "s1", convo("alpha"))
    Indexer(catalog, speed=speed()).run([root])
    cp = checkpoint(catalog, path)
    st = path.stat()
    assert cp == {
        "byte_offset": st.st_size,
        "message_count": 3,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "inode": st.st_ino,
        "signature": signature(path, st.st_size),
        "pending": 0,
        "health": "ok",
    }


@both_ways
def test_append_reads_only_the_new_range(root: Path, catalog: Catalog) -> None:
    path = write_session(root, "s1", convo("alpha", 50))
    Indexer(catalog, speed=speed()).run([root])
    size = path.stat().st_size
    append_lines(path, [{"role": "user", "content": "brandnew appended words"}])
    indexer = Indexer(catalog, speed=speed())
    stats = indexer.run([root])
    assert (stats.appended, stats.rebuilt) == (1, 0)
    assert stats.bytes_read == path.stat().st_size - size
    assert hits(catalog, "brandnew") == [("s1.jsonl", 50)]
    assert len(hits(catalog, "alpha")) == 50


@both_ways
def test_unchanged_sources_are_not_read_again(root: Path, catalog: Catalog) -> None:
    write_session(root, "s1", convo("alpha"))
    Indexer(catalog, speed=speed()).run([root])
    stats = Indexer(catalog, speed=speed()).run([root])
    assert (stats.indexed, stats.bytes_read) == (0, 0)


@both_ways
def test_shorter_file_rebuilds(root: Path, catalog: Catalog) -> None:
    write_session(root, "s1", convo("alpha", 6))
    Indexer(catalog, speed=speed()).run([root])
    write_session(root, "s1", convo("omega", 2))
    stats = Indexer(catalog, speed=speed()).run([root])
    assert stats.rebuilt == 1
    assert hits(catalog, "alpha") == []
    assert hits(catalog, "omega") == [("s1.jsonl", 0), ("s1.jsonl", 1)]


@both_ways
def test_changed_prefix_with_same_length_rebuilds(root: Path, catalog: Catalog) -> None:
    path = write_session(root, "s1", convo("alpha", 3))
    Indexer(catalog, speed=speed()).run([root])
    raw = path.read_bytes().replace(b"alpha message 0", b"gamma message 0")
    with open(path, "r+b") as handle:  # in place: same inode, same size
        handle.write(raw)
    append_lines(path, [{"role": "user", "content": "tail"}])
    stats = Indexer(catalog, speed=speed()).run([root])
    assert stats.rebuilt == 1
    assert hits(catalog, "gamma") == [("s1.jsonl", 0)]
    assert ("s1.jsonl", 0) not in hits(catalog, "alpha")


@both_ways
def test_new_inode_rebuilds(root: Path, catalog: Catalog) -> None:
    path = write_session(root, "s1", convo("alpha", 3))
    Indexer(catalog, speed=speed()).run([root])
    replacement = root / "tmp.jsonl.new"
    replacement.write_text(path.read_text() + json.dumps({"role": "user", "content": "z"}) + "\n")
    os.replace(replacement, path)
    stats = Indexer(catalog, speed=speed()).run([root])
    assert stats.rebuilt == 1
    assert len(hits(catalog, "alpha")) == 3


@both_ways
def test_vanished_source_is_removed_only_by_a_completed_scan(root: Path, catalog: Catalog) -> None:
    keep = write_session(root, "keep", convo("alpha"))
    gone = write_session(root, "gone", convo("alpha"))
    Indexer(catalog, speed=speed()).run([root])
    gone.unlink()
    indexer = Indexer(catalog, speed=speed())
    root_id = indexer.scan_root(root)  # a scan that has not completed...
    indexer.index_pending([root_id])
    names = catalog.db.execute("SELECT path FROM sources").fetchall()
    assert (str(gone),) in names  # ...removes nothing yet
    assert indexer.complete_scan(root_id) == 1
    assert catalog.db.execute("SELECT path FROM sources").fetchall() == [(str(keep),)]
    assert {name for name, _ in hits(catalog, "alpha")} == {"keep.jsonl"}


@both_ways
def test_a_source_vanishing_mid_run_never_hides_healthy_ones(root: Path, catalog: Catalog) -> None:
    write_session(root, "good", convo("alpha"))
    doomed = write_session(root, "doomed", convo("alpha"))
    garbage = root / "binary.jsonl"
    garbage.write_bytes(bytes(range(256)) * 40)
    indexer = Indexer(catalog, speed=speed())
    root_id = indexer.scan_root(root)
    doomed.unlink()
    indexer.index_pending([root_id])
    health = dict(catalog.db.execute("SELECT path, health FROM sources").fetchall())
    assert health[str(doomed)] == "missing"
    assert health[str(garbage)] == "ok"  # unreadable lines are counted, not fatal
    line_errors = catalog.db.execute(
        "SELECT line_errors FROM sources WHERE path = ?", (str(garbage),)
    ).fetchone()[0]
    assert line_errors > 0
    assert {name for name, _ in hits(catalog, "alpha")} == {"good.jsonl"}


@both_ways
def test_budget_failure_is_recorded_and_isolated(
    root: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_session(root, "small", convo("alpha"))
    write_session(root, "huge", [{"role": "user", "content": "alpha " + "x" * 5000}])
    monkeypatch.setenv("CONVODEX_REPLAY_MAX_RECORD_BYTES", "4096")
    stats = Indexer(catalog, speed=speed()).run([root])
    assert stats.failed == 1 and stats.errors == {"SessionReplayLimitError": 1}
    row = catalog.db.execute(
        "SELECT health, error_class, pending FROM sources WHERE path LIKE '%huge.jsonl'"
    ).fetchone()
    assert row == ("failed", "SessionReplayLimitError", 0)
    assert {name for name, _ in hits(catalog, "alpha")} == {"small.jsonl"}


@both_ways
def test_cli_index_summary(root: Path, cli: CliRun) -> None:
    write_session(root, "s1", convo("alpha"))
    write_session(root, "s2", convo("beta"), subdir="nested/deeper")
    out = as_json(cli("index", "--root", str(root), "--json"))
    assert out["stats"]["indexed"] == 2 and out["stats"]["messages"] == 6
    assert out["progress"] == {
        "state": "complete",
        "indexed": 2,
        "total": 2,
        "pending": 0,
        "failed": 0,
        "revision": out["progress"]["revision"],
    }
    again = as_json(cli("index", "--root", str(root), "--json"))
    assert again["stats"]["indexed"] == 0


def test_a_dead_indexing_helper_never_stalls_a_run(
    root: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bulk runs read in a helper process; if it dies, this process reads instead."""
    import helpers
    from convodex.catalog.speed import helper as helper_module

    for i in range(6):
        write_session(root, f"s{i}", convo(f"alpha{i}", 40))
    monkeypatch.setattr(helper_module, "read_in_helper", helpers.die_at_once)
    stats = Indexer(catalog, speed=helpers.helped()).run([root])
    assert stats.indexed == 6 and stats.failed == 0
    assert len(hits(catalog, "alpha3")) == 40


@pytest.mark.parametrize("helper", ["die_after_a_group", "slow_helper"])
def test_sources_the_helper_did_not_deliver_are_read_here_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helper: str
) -> None:
    """A helper that dies after its first group, or is slow: this process reads (and
    counts) every other source exactly once, in order, claimed or not."""
    import helpers
    from convodex.catalog import indexer as indexer_module
    from convodex.catalog.speed import helper as helper_module

    root = tmp_path / "sessions"
    for i in range(30):
        write_session(root, f"s{i:02}", convo(f"alpha{i}", 30))
    monkeypatch.setattr(helper_module, "HELPER_HEAD_BYTES", 1)
    monkeypatch.setattr(indexer_module, "COMMIT_BYTES", 8 * 1024)  # many small groups
    with open_catalog(tmp_path / "alone") as alone:
        expected = Indexer(alone).run([root])
        found = {i: hits(alone, f"alpha{i}") for i in range(30)}
    monkeypatch.setattr(helper_module, "read_in_helper", getattr(helpers, helper))
    with open_catalog(tmp_path / "helped") as helped:
        stats = Indexer(helped, speed=helpers.helped()).run([root])
        assert {i: hits(helped, f"alpha{i}") for i in range(30)} == found
    assert (stats.indexed, stats.failed, stats.messages, stats.documents) == (
        expected.indexed,
        0,
        expected.messages,
        expected.documents,
    )


@pytest.mark.parametrize("helper", [False, True])
def test_a_first_index_reads_the_newest_sessions_first(
    root: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch, helper: bool
) -> None:
    """Recent sessions are searchable first on a large history: sources go newest
    first by modification time, whichever process reads them (a large one here is
    read by this process while a helper reads the small ones)."""
    import helpers
    from convodex.catalog import indexer as indexer_module
    from convodex.catalog.speed import helper as helper_module

    ages = {"s0": 3, "s1": 5, "s2": 1, "s3": 4, "s4": 2}  # days old
    for name, days in ages.items():
        path = write_session(root, name, convo(f"word{name}", 60 if name == "s3" else 4))
        stamp = 1_767_225_600 - days * 86_400
        os.utime(path, (stamp, stamp))
    monkeypatch.setattr(indexer_module, "COMMIT_BYTES", 1)  # a commit per source
    monkeypatch.setattr(helper_module, "HELPER_MAX_SOURCE_BYTES", 2048)  # s3 is large
    indexer = Indexer(catalog, speed=helpers.helped() if helper else None)
    searchable: list[list[str]] = []

    def after_commit() -> bool:
        searchable.append([n for n in ages if hits(catalog, f"word{n}")])
        return True

    root_id = indexer.scan_root(root)
    assert indexer.index_sources(indexer.pending_sources([root_id]), between=after_commit)
    newest_first = sorted(ages, key=ages.__getitem__)
    assert [sorted(seen, key=ages.__getitem__) for seen in searchable] == [
        newest_first[: n + 1] for n in range(len(ages))
    ]


@both_ways
def test_a_time_no_catalog_can_hold_is_no_time(root: Path, catalog: Catalog) -> None:
    """A message time past what SQLite stores (1e30 ms) once stopped the whole run with
    an OverflowError; now that message is untimed and every session is indexed."""
    write_session(
        root, "odd", [{"role": "user", "content": "quince far future", "createdAt": 1e30}]
    )
    write_session(root, "fine", convo("quince"))
    stats = Indexer(catalog, speed=speed()).run([root])
    assert stats.indexed == 2 and stats.failed == 0
    assert sorted(hits(catalog, "quince")) == [
        ("fine.jsonl", 0),
        ("fine.jsonl", 1),
        ("fine.jsonl", 2),
        ("odd.jsonl", 0),
    ]
    timed = catalog.db.execute(
        f"SELECT m.timed FROM messages AS m JOIN slots ON slots.slot = m.base >> {SLOT_SHIFT} "
        "JOIN sources AS s ON s.id = slots.source_id WHERE s.session_id = 'odd'"
    ).fetchall()
    assert timed == [(0,)]


@both_ways
def test_a_scan_opens_nothing_and_reading_fills_in_the_session_facts(
    tmp_path: Path, catalog: Catalog
) -> None:
    """A scan registers new sources by name and stat alone (a large history's newest
    sessions are searchable sooner); the facts come with the messages: the session id
    inside a Codex rollout, its workspace, and a sub-agent session's mark."""
    root = tmp_path / "codex"
    path = write_codex_rollout(
        root,
        "0199aaaa-bbbb-cccc",
        "/home/dev/orchard",
        [("user", "medlar tart", 1_700_000_000_000)],
    )
    indexer = Indexer(catalog, speed=speed())
    indexer.scan_root(root)
    row = catalog.db.execute(
        "SELECT session_id, workspace, pending FROM sources WHERE path = ?", (str(path),)
    ).fetchone()
    assert row == (path.stem, None, 1)  # a stand-in until it is read
    indexer.index_pending()
    row = catalog.db.execute(
        "SELECT session_id, workspace, pending FROM sources WHERE path = ?", (str(path),)
    ).fetchone()
    assert row == ("0199aaaa-bbbb-cccc", "/home/dev/orchard", 0)
    (hit,) = search(catalog, "medlar")["hits"]
    assert (hit["sessionId"], hit["project"]) == ("0199aaaa-bbbb-cccc", "/home/dev/orchard")
    assert search(catalog, "medlar project:orchard")["hits"]


@both_ways
def test_a_sub_agent_session_is_marked_when_first_read(root: Path, catalog: Catalog) -> None:
    write_session(root, "main", convo("loquat"))
    write_session(root, "helper", convo("loquat"), subdir="main/subagents")
    Indexer(catalog, speed=speed()).run([root])
    assert [Path(h["sessionPath"]).stem for h in search(catalog, "loquat")["hits"]] == ["main"] * 3
    everything = search(catalog, "loquat", include_subagents=True)["hits"]
    assert {Path(h["sessionPath"]).stem for h in everything} == {"main", "helper"}
