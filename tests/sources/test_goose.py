"""Goose: sessions.db under ~/.local/share/goose/sessions (and, by its tables, any
sessions.db under any root), rebuilt here from the public SQL sample plus hand-made
rows in Goose's documented content shape (tool requests and responses, a sub-agent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from convodex.sources.registry import FORMATS
from convodex.sqlite import sqlite3
from helpers import FIXTURES, CliRun, as_json, hits, read_all
from sources.agents import Agent, Placed, check_any_root, check_default_root

SQL = FIXTURES / "goose" / "deja-vu-goose.sql"
TOOLS = "20250724_3"


def _row(db: sqlite3.Connection, session: str, role: str, at: int, *blocks: Any) -> None:
    db.execute(
        "insert into messages (message_id, session_id, role, content_json, created_timestamp)"
        " values (?, ?, ?, ?, ?)",
        (f"msg-{at}", session, role, json.dumps(list(blocks)), at),
    )


def build_store(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(SQL.read_text("utf-8"))
    db.executemany(
        "insert into sessions (id, name, description, user_set_name, session_type, working_dir)"
        " values (?, ?, ?, ?, ?, '/workspace/demo')",
        [(TOOLS, "fix the tests", "pytest run", 1, "user"), ("20250724_4", "", "", 0, "sub_agent")],
    )
    call = {
        "status": "success",
        "value": {"name": "developer__shell", "arguments": {"command": "pytest -q"}},
    }
    _row(db, TOOLS, "user", 1784282500, {"type": "text", "text": "run the failing tests"})
    _row(
        db,
        TOOLS,
        "assistant",
        1784282501,
        {"type": "thinking", "thinking": "pondering quietly", "signature": ""},
        {"type": "text", "text": "Running them now"},
        {"type": "toolRequest", "id": "call_1", "toolCall": call},
    )
    ok = {"status": "success", "value": [{"type": "text", "text": "3 passed in 0.2s"}]}
    _row(db, TOOLS, "user", 1784282502, {"type": "toolResponse", "id": "call_1", "toolResult": ok})
    failed = {"status": "error", "error": "-32603: command timed out"}
    _row(
        db,
        TOOLS,
        "user",
        1784282503,
        {"type": "toolResponse", "id": "call_1", "toolResult": failed},
    )
    _row(db, "20250724_4", "user", 1784282600, {"type": "text", "text": "summarize quarantine"})
    db.commit()
    db.close()
    return path


def agent(store: Path) -> Agent:
    return Agent(
        name="goose",
        root=".local/share/goose/sessions",
        placed=[Placed(store, "sessions.db")],
        said=[
            ("user_text", "inspect"),
            ("assistant_text", "readable"),
            ("tool_input", "pytest"),
            ("tool_output", "passed"),
            ("tool_error", "timed"),
        ],
        resume="goose session --resume --session-id 20250724_2",
        session="20250724_2",
        subagent_word="quarantine",
    )


def test_found_under_the_default_root(tmp_path: Path, cli: CliRun) -> None:
    check_default_root(agent(build_store(tmp_path / "sessions.db")), cli)


def test_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(agent(build_store(tmp_path / "sessions.db")), tmp_path, cli)


def test_messages_with_tools_titles_and_times(tmp_path: Path) -> None:
    messages = read_all(FORMATS["goose"], build_store(tmp_path / "sessions.db"))
    tools = [m for m in messages if m.session_id == TOOLS]
    said = [(m.role, [(d.kind, d.tool_name) for d in m.documents]) for m in tools]
    assert said == [
        ("user", [("user_text", None)]),
        ("assistant", [("assistant_text", None), ("tool_input", "developer__shell")]),
        ("tool", [("tool_output", "developer__shell")]),  # named through its request's id
        ("tool", [("tool_error", "developer__shell")]),
    ]
    assert "pondering" not in "\n".join(m.text() for m in messages)  # thinking
    assert tools[0].title == "fix the tests"  # the name its person set
    first = messages[0]
    assert (first.session_id, first.title, first.created_at) == (
        "20250724_2",
        "sqlite fixture",  # else Goose's description of the session
        1784282401000,
    )


def test_another_apps_sessions_db_is_not_taken(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "elsewhere"
    root.mkdir()
    db = sqlite3.connect(root / "sessions.db")
    db.execute("create table sessions (id text primary key, token text)")
    db.close()
    out = as_json(cli("index", "--root", str(root), "--json"))
    assert out["stats"]["indexed"] == 0
    assert hits(cli, "token") == []
