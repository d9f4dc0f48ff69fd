"""Hermes Agent: its SQLite store (~/.hermes/state.db, rebuilt here from the public SQL
sample and a real recording's rows) and session snapshots, found under the default root
and, by their columns and keys, under any root; child sessions apart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from convodex.sources.registry import FORMATS
from convodex.sqlite import sqlite3
from helpers import FIXTURES, CliRun, as_json, hits, read_all
from sources.agents import Agent, Placed, check_any_root, check_default_root

HERMES = FIXTURES / "hermes"
SNAPSHOT = HERMES / "agent-sessions-small.json"
RECORDING = HERMES / "irrlicht" / "2-2_auto-executed-tool-call" / "transcript.jsonl"
CHILD = "20260802_212455_5f0c1e"  # the recording's session, as a delegated child


def build_store(path: Path) -> Path:
    """A ``state.db``: deja-vu's messages table and two sessions, plus the recording's
    real rows (``_ts`` is the row's REAL timestamp) as a ``delegate_task`` child."""
    db = sqlite3.connect(path)
    db.executescript((HERMES / "deja-vu-hermes.sql").read_text("utf-8"))
    db.execute(
        "create table sessions (id text primary key, source text, model text, cwd text,"
        " parent_session_id text, title text, started_at real)"
    )
    db.executemany(
        "insert into sessions values (?, 'cli', null, null, ?, ?, null)",
        [("01JCH1", None, "Fetcher retry loop"), ("01JCH2", None, None), (CHILD, "01JCH2", None)],
    )
    for line in RECORDING.read_text("utf-8").splitlines():
        row = json.loads(line)
        db.execute(
            "insert into messages (session_id, role, content, tool_call_id, tool_calls,"
            " tool_name, timestamp, finish_reason) values (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                CHILD,
                row["role"],
                row["content"],
                row["tool_call_id"],
                row["tool_calls"],
                row["tool_name"],
                row["_ts"],
                row["finish_reason"],
            ),
        )
    db.commit()
    db.close()
    return path


def agent(store: Path) -> Agent:
    return Agent(
        name="hermes",
        root=".hermes",
        placed=[
            Placed(store, "profiles/architect/state.db"),
            Placed(SNAPSHOT, "sessions/session_20260429_hermes_small.json"),
        ],
        said=[
            ("user_text", "backs"),
            ("assistant_text", "msgpack"),
            ("user_text", "Summarize"),
            ("assistant_text", "fixture"),
            ("tool_input", "skills_list"),
            ("tool_output", "remindctl"),
        ],
        resume="hermes --resume 01JCH1",
        session="01JCH1",
        subagent_word="remindctl",
    )


def test_found_under_the_default_root(tmp_path: Path, cli: CliRun) -> None:
    check_default_root(agent(build_store(tmp_path / "state.db")), cli)


def test_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(agent(build_store(tmp_path / "state.db")), tmp_path, cli)


def test_store_sessions_in_order_with_tools(tmp_path: Path) -> None:
    messages = read_all(FORMATS["hermes"], build_store(tmp_path / "state.db"))
    by_session: dict[str | None, list[tuple[str, list[tuple[str, str | None]]]]] = {}
    for m in messages:
        docs: list[tuple[str, str | None]] = [(d.kind, d.tool_name) for d in m.documents]
        by_session.setdefault(m.session_id, []).append((m.role, docs))
    # The content-less tool row is no message.
    assert by_session["01JCH1"] == [
        ("user", [("user_text", None)]),
        ("assistant", [("assistant_text", None)]),
    ]
    assert by_session[CHILD] == [
        ("user", [("user_text", None)]),
        ("assistant", [("tool_input", "skills_list")]),
        ("tool", [("tool_output", "skills_list")]),
        ("assistant", [("assistant_text", None)]),
    ]
    first = messages[0]
    assert (first.created_at, first.title, first.subagent) == (
        1785015600250,
        "Fetcher retry loop",
        False,
    )
    assert all(m.subagent for m in messages if m.session_id == CHILD)


def test_snapshot_facts() -> None:
    info = FORMATS["hermes"].info(SNAPSHOT)
    assert (info.session_id, info.workspace_root, info.created_at) == (
        "20260429_hermes_small",
        "/tmp/hermes-small",
        1777492800000,
    )
    assert [m.role for m in read_all(FORMATS["hermes"], SNAPSHOT)] == ["user", "assistant"]


def test_another_tools_state_db_is_not_taken(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "elsewhere"
    root.mkdir()
    db = sqlite3.connect(root / "state.db")
    db.execute("create table messages (id integer primary key, body text)")
    db.close()
    shutil.copy(SNAPSHOT, root / "snapshot.json")
    out = as_json(cli("index", "--root", str(root), "--json"))
    assert out["stats"]["indexed"] == 1  # the snapshot, by its keys; not the other store
    assert hits(cli, "Summarize")


def test_a_broken_snapshot_fails_alone(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    shutil.copy(SNAPSHOT, root / "session_a.json")
    (root / "session_b.json").write_bytes(SNAPSHOT.read_bytes()[:200])
    out = as_json(cli("index", "--root", f"{root}:hermes", "--json"))
    assert out["stats"]["indexed"] == 2 and out["stats"]["lineErrors"] >= 1
    assert hits(cli, "Summarize")
