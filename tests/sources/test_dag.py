"""Legacy DAG replay (SPEC L1.2): the effective head, overlays, and the budget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import convodex.sources.dag as dag
from convodex.errors import SessionReplayLimitError, SourceError
from convodex.sources.base import Budget, ReadResult


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def msg(mid: str, text: str, role: str = "user", **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": mid, "msgs": [{"role": role, "content": text}], **extra}


def texts(path: Path, budget: Budget | None = None) -> list[str]:
    result = ReadResult(0, 0)
    out = [m.text() for m in dag.FORMAT.read(path, result, budget or Budget.from_env())]
    for m_index, text in enumerate(out):
        assert isinstance(text, str) and m_index >= 0
    return out


def test_rewind_then_continue_drops_the_abandoned_turns(tmp_path: Path) -> None:
    log = write(
        tmp_path / "s.jsonl",
        [
            msg("m1", "alpha"),
            msg("m2", "abandoned", "assistant"),
            {"type": "rewind", "head": "main", "parent": "m1", "at": 3},
            msg("m3", "continued", "assistant"),
        ],
    )
    assert texts(log) == ["alpha", "continued"]


def test_redaction_beats_a_patch_of_the_same_message(tmp_path: Path) -> None:
    log = write(
        tmp_path / "s.jsonl",
        [
            msg("m1", "secret"),
            {"type": "patch", "id": "m1", "msgs": [{"role": "user", "content": "patched"}]},
            {"type": "redact", "id": "m1"},
            msg("m2", "after", "assistant"),
            {"type": "patch", "id": "m2", "msgs": [{"role": "assistant", "content": "fixed"}]},
        ],
    )
    messages = list(dag.FORMAT.read(log, ReadResult(0, 0), Budget.from_env()))
    assert [m.text() for m in messages] == ["", "fixed"]
    assert messages[0].role == dag.REDACTED_ROLE
    loaded = dag.FORMAT.load(log, messages[1].offset, messages[1].length, 1)
    assert loaded is not None and loaded.text() == "fixed"


def test_a_fork_with_its_own_system_message(tmp_path: Path) -> None:
    log = write(
        tmp_path / "s.jsonl",
        [
            {"type": "message", "id": "s0", "msgs": [{"role": "system", "content": "old"}]},
            msg("m1", "shared"),
            msg("m2", "mainline", "assistant", at=2),
            {"type": "fork", "head": "f", "parent": "m1", "at": 3},
            {"type": "system", "head": "f", "msgs": [{"role": "system", "content": "forked"}]},
            msg("m3", "forkline", "assistant", head="f", at=4),
        ],
    )
    messages = list(dag.FORMAT.read(log, ReadResult(0, 0), Budget.from_env()))
    # The fork is the most active live head; its system message replaces the leading one.
    assert [m.role for m in messages] == ["system", "user", "assistant"]
    assert [m.text() for m in messages] == ["", "shared", "forkline"]


def test_selection_rules(tmp_path: Path) -> None:
    base = [
        msg("m1", "root"),
        msg("m2", "mainline", "assistant", at=5),
        {"type": "fork", "head": "f", "parent": "m1", "at": 1},
        msg("m3", "forkline", "assistant", head="f", at=2),
    ]
    # Without a select, the live head with the latest activity wins.
    assert texts(write(tmp_path / "a.jsonl", base)) == ["root", "mainline"]
    # The last select wins ...
    selected = [*base, {"type": "select", "head": "f", "at": 6}]
    assert texts(write(tmp_path / "b.jsonl", selected)) == ["root", "forkline"]
    # ... unless its head is retired: then the most active live head.
    retired = [*base, {"type": "retire", "head": "f"}, {"type": "select", "head": "f"}]
    assert texts(write(tmp_path / "c.jsonl", retired)) == ["root", "mainline"]
    # Every head retired: retired heads by activity.
    both = [*base, {"type": "retire", "head": "f"}, {"type": "retire", "head": "main"}]
    assert texts(write(tmp_path / "d.jsonl", both)) == ["root", "mainline"]


def test_activity_ties_go_to_the_larger_offset(tmp_path: Path) -> None:
    log = write(
        tmp_path / "s.jsonl",
        [
            msg("m1", "root", at=1),
            {"type": "fork", "head": "f", "parent": "m1", "at": 1},
            msg("m2", "later", "assistant", head="f", at=1),
        ],
    )
    assert texts(log) == ["root", "later"]


def test_a_cycle_and_a_missing_parent_stop_the_walk(tmp_path: Path) -> None:
    cycle = write(
        tmp_path / "c.jsonl",
        [msg("a", "one", parent="b"), msg("b", "two", "assistant", parent="a")],
    )
    assert texts(cycle) == ["one", "two"]
    missing = write(tmp_path / "m.jsonl", [msg("x", "orphan", parent="nowhere")])
    assert texts(missing) == ["orphan"]


def test_duplicate_ids_are_ignored_and_unknown_types_fail_the_source(tmp_path: Path) -> None:
    dup = write(tmp_path / "d.jsonl", [msg("m1", "first"), msg("m1", "second")])
    assert texts(dup) == ["first"]
    bad = write(tmp_path / "u.jsonl", [msg("m1", "x"), {"type": "teleport", "id": "m1"}])
    with pytest.raises(SourceError) as err:
        texts(bad)
    assert "teleport" not in str(err.value)


def test_a_dag_over_the_metadata_budget_fails(tmp_path: Path) -> None:
    log = write(tmp_path / "s.jsonl", [msg(f"m{i}", "x" * 10) for i in range(50)])
    budget = Budget(1 << 30, 1 << 20, 1 << 30, 2048)
    with pytest.raises(SessionReplayLimitError) as err:
        texts(log, budget)
    assert err.value.resource == "dag_meta"
    # Message bodies do not count as metadata.
    big = write(tmp_path / "b.jsonl", [msg("m1", "y" * 100_000)])
    assert len(texts(big, Budget(1 << 30, 1 << 20, 1 << 30, 2048))[0]) == 100_000


def test_dag_logs_are_rebuilt_not_appended() -> None:
    assert dag.FORMAT.append_only is False
