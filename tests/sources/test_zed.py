"""Zed agent threads: threads/threads.db under Zed's data directory (and, by its table,
any threads.db under any root), rebuilt here from the public SQL sample (a plain and a
real zstd row) plus a hand-made 0.3.0 sub-agent thread with a tool call and results."""

from __future__ import annotations

import json
from pathlib import Path

import zstandard

from convodex.sources.registry import FORMATS
from convodex.sqlite import sqlite3
from helpers import FIXTURES, CliRun, as_json, hits, read_all
from sources.agents import Agent, Placed, check_any_root, check_default_root

SQL = FIXTURES / "zed" / "deja-vu-zed.sql"
CHILD = "registry-zed-child"
CHILD_THREAD = {
    "version": "0.3.0",
    "title": "look up the store path",
    "updated_at": "2026-07-19T10:00:02Z",
    "messages": [
        {"User": {"id": "u1", "content": [{"Text": "find the kestrel setting"}]}},
        {
            "Agent": {
                "content": [
                    {"Thinking": {"text": "hidden musing", "signature": None}},
                    {"Text": "Reading the settings"},
                    {
                        "ToolUse": {
                            "id": "tool-1",
                            "name": "read_file",
                            "raw_input": "{}",
                            "input": {"path": "settings.json"},
                            "is_input_complete": True,
                        }
                    },
                ],
                "tool_results": {
                    "tool-1": {
                        "tool_use_id": "tool-1",
                        "tool_name": "read_file",
                        "is_error": False,
                        "content": {"Text": "kestrel = true"},
                        "output": None,
                    }
                },
            }
        },
        "Resume",
    ],
}


def build_store(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(SQL.read_text("utf-8"))
    frame = zstandard.ZstdCompressor().compress(json.dumps(CHILD_THREAD).encode())
    db.execute(
        "insert into threads (id, summary, updated_at, data_type, data, parent_id)"
        " values (?, 'look up the store path', '2026-07-19T10:00:02+00:00', 'zstd', ?, ?)",
        (CHILD, frame, "registry-zed-modern"),
    )
    db.commit()
    db.close()
    return path


def agent(store: Path) -> Agent:
    return Agent(
        name="zed",
        root=".local/share/zed/threads",
        placed=[Placed(store, "threads.db")],
        said=[
            ("user_text", "pre-compression"),
            ("assistant_text", "parse"),
            ("user_text", "where"),
            ("assistant_text", "threads.db"),
            ("tool_input", "settings.json"),
            ("tool_output", "kestrel"),
        ],
        resume=None,
        session="registry-zed-modern",
        subagent_word="kestrel",
    )


def test_found_under_the_default_root(tmp_path: Path, cli: CliRun) -> None:
    check_default_root(agent(build_store(tmp_path / "threads.db")), cli)


def test_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(agent(build_store(tmp_path / "threads.db")), tmp_path, cli)


def test_both_encodings_with_titles_tools_and_no_thinking(tmp_path: Path) -> None:
    messages = read_all(FORMATS["zed"], build_store(tmp_path / "threads.db"))
    said = [
        (m.session_id, m.role, [(d.kind, d.tool_name) for d in m.documents], m.title)
        for m in messages
    ]
    assert said == [
        ("registry-zed-legacy", "user", [("user_text", None)], "legacy zed thread"),
        ("registry-zed-legacy", "assistant", [("assistant_text", None)], "legacy zed thread"),
        ("registry-zed-modern", "user", [("user_text", None)], "read the zed thread store"),
        (
            "registry-zed-modern",
            "assistant",
            [("assistant_text", None)],
            "read the zed thread store",
        ),
        (CHILD, "user", [("user_text", None)], "look up the store path"),
        (
            CHILD,
            "assistant",
            [("assistant_text", None), ("tool_input", "read_file")],
            "look up the store path",
        ),
        (CHILD, "tool", [("tool_output", "read_file")], "look up the store path"),
    ]
    everything = "\n".join(m.text() for m in messages)
    assert "reasoning is not indexed" not in everything and "musing" not in everything
    assert [m.subagent for m in messages if m.session_id == CHILD] == [True, True, True]


def test_a_broken_frame_fails_its_thread_alone(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "threads"
    root.mkdir()
    store = build_store(root / "threads.db")
    db = sqlite3.connect(store)
    db.execute("update threads set data = x'28b52ffd00' where id = ?", (CHILD,))
    db.commit()
    db.close()
    out = as_json(cli("index", "--root", str(root), "--json"))
    assert out["stats"]["lineErrors"] == 1
    assert hits(cli, "compression") and hits(cli, "kestrel", "--include-subagents") == []


def test_another_apps_threads_db_is_not_taken(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "elsewhere"
    root.mkdir()
    db = sqlite3.connect(root / "threads.db")
    db.execute("create table threads (id text primary key, body text)")
    db.close()
    assert as_json(cli("index", "--root", str(root), "--json"))["stats"]["indexed"] == 0
