"""OpenCode: the public JSON-tree fixtures, and hand-built trees and databases.

No public ``opencode.db`` exists, so the databases are built here from the documented
schema (``session.sql.ts``: tables session / message / part with JSON ``data``), in
WAL mode like OpenCode's own. The same sessions are written in both layouts, so both
readers are held to the same rules: a revert hides its message and every later one,
a fork is an independent session, a child session is a sub-agent, reasoning,
synthetic text and compaction summaries are never found, and tool failures are
``tool_error``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from convodex.sources import opencode
from convodex.sources.discover import scan
from convodex.sources.roots import resolve_root
from convodex.sqlite import sqlite3
from corpus import OPENCODE_SCHEMA
from helpers import FIXTURES, CliRun, as_json, read_all, read_beside_a_writer, tree_hashes

# The documented v1.2 schema: the project's corpus generator writes the same one.
SCHEMA = OPENCODE_SCHEMA

T0 = 1_767_225_600_000


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def tool(name: str, status: str, args: dict[str, Any], **state: Any) -> dict[str, Any]:
    return {
        "type": "tool",
        "callID": f"call_{name}",
        "tool": name,
        "state": {"status": status, "input": args, **state},
    }


def message(mid: str, role: str, parts: list[dict[str, Any]], **info: Any) -> dict[str, Any]:
    return {"id": mid, "role": role, "parts": parts, **info}


def session(sid: str, title: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"id": sid, "title": title, "directory": "/home/dev/app", "messages": messages, **extra}


def sessions() -> list[dict[str, Any]]:
    """A worked session reverted at its second prompt, a sub-agent, a fork, a compaction."""
    first = [
        message("msg_a1", "user", [text("why does zebrafish fail")]),
        message(
            "msg_a2",
            "assistant",
            [
                {"type": "reasoning", "text": "secretthought"},
                text("running the tests"),
                text("injectedcontext", synthetic=True),
                tool(
                    "bash",
                    "completed",
                    {"command": "pytest"},
                    output="1 failed",
                    metadata={"exit": 1},
                ),
                tool("read", "error", {"filePath": "/etc/shadow"}, error="quokka unreadable"),
                tool(
                    "grep",
                    "completed",
                    {"pattern": "gecko"},
                    output="gecko found",
                    metadata={"exit": 0},
                ),
                {"type": "step-finish", "reason": "stop"},
            ],
        ),
    ]
    reverted = [
        message("msg_a3", "user", [text("now try walrus")]),
        message("msg_a4", "assistant", [text("walrus answer")]),
    ]
    return [
        session("ses_a", "Fix the flaky test", first + reverted, revert={"messageID": "msg_a3"}),
        session(
            "ses_b",
            "Child session - 2026-01-01T00:00:00.000Z",
            [message("msg_b1", "user", [text("find the narwhal")])],
            parentID="ses_a",
        ),
        session(
            "ses_c",
            "Fix the flaky test (fork #1)",
            [
                message("msg_c1", "user", [text("why does zebrafish fail")]),
                message("msg_c2", "user", [text("forked ocelot")]),
            ],
        ),
        session(
            "ses_d",
            "Long one",
            [
                message("msg_d1", "user", [{"type": "compaction", "auto": True}]),
                message("msg_d2", "assistant", [text("summarytext")], summary=True),
                message("msg_d3", "user", [text("after the compaction ibex")]),
            ],
        ),
    ]


def write_tree(storage: Path, spec: list[dict[str, Any]]) -> None:
    """The JSON storage tree OpenCode wrote before v1.2."""
    for n, s in enumerate(spec):
        info = {k: v for k, v in s.items() if k != "messages"}
        info["time"] = {"created": T0 + n, "updated": T0 + n}
        write_json(storage / "session" / "proj_1" / f"{s['id']}.json", info)
        for m, msg in enumerate(s["messages"]):
            data = {k: v for k, v in msg.items() if k != "parts"}
            data.update(sessionID=s["id"], time={"created": T0 + 1000 * n + m})
            write_json(storage / "message" / s["id"] / f"{msg['id']}.json", data)
            for p, part in enumerate(msg["parts"]):
                pid = f"prt_{msg['id']}_{p}"
                body = {"id": pid, "sessionID": s["id"], "messageID": msg["id"], **part}
                write_json(storage / "part" / msg["id"] / f"{pid}.json", body)


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), "utf-8")


def write_db(path: Path, spec: list[dict[str, Any]]) -> None:
    """``opencode.db`` as v1.2+ writes it (WAL mode), from the documented schema."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript(SCHEMA)
    with db:
        db.execute(
            "INSERT INTO project VALUES ('proj_1', '/home/dev/app', 'git', NULL, ?, ?)", (T0, T0)
        )
        for n, s in enumerate(spec):
            insert_session(db, s, T0 + n)
            for m, msg in enumerate(s["messages"]):
                insert_message(db, s["id"], msg, T0 + 1000 * n + m)
    db.close()


def insert_session(db: sqlite3.Connection, s: dict[str, Any], at: int) -> None:
    revert = json.dumps(s["revert"]) if s.get("revert") else None
    db.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, "
        "revert, time_created, time_updated) VALUES (?, 'proj_1', ?, ?, ?, ?, '1.2.0', ?, ?, ?)",
        (s["id"], s.get("parentID"), s["id"], s["directory"], s["title"], revert, at, at),
    )


def insert_message(db: sqlite3.Connection, sid: str, msg: dict[str, Any], at: int) -> None:
    data = {k: v for k, v in msg.items() if k not in ("id", "parts")}
    data["time"] = {"created": at}
    db.execute(
        "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (msg["id"], sid, at, at, json.dumps(data))
    )
    for p, part in enumerate(msg["parts"]):
        db.execute(
            "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
            (f"prt_{msg['id']}_{p}", msg["id"], sid, at, at, json.dumps(part)),
        )


def build(layout: str, data_dir: Path) -> Path:
    """An OpenCode data directory in one layout; returns the directory."""
    if layout == "db":
        write_db(data_dir / "opencode.db", sessions())
    else:
        write_tree(data_dir / "storage", sessions())
    return data_dir


def by_session(layout: str, data_dir: Path) -> dict[str, list[Any]]:
    """Every indexed message of a data directory, per OpenCode session."""
    root = resolve_root(f"{data_dir}:opencode")
    found: dict[str, list[Any]] = {}
    for item in scan(root):
        info = opencode.FORMAT.info(item.path)
        for m in read_all(opencode.FORMAT, item.path):
            sid = m.session_id or info.session_id
            m.subagent = m.subagent or info.subagent
            found.setdefault(sid, []).append(m)
    return found


def said(messages: list[Any]) -> list[str]:
    """What the person and the assistant said, message by message (tool text left out)."""
    return [
        d.text for m in messages for d in m.documents if d.kind in ("user_text", "assistant_text")
    ]


def test_fixture_trees_every_session() -> None:
    files = {f.stem: f for f in (FIXTURES / "opencode").rglob("session/*/*.json")}
    assert len(files) == 6
    read = {stem: read_all(opencode.FORMAT, f) for stem, f in files.items()}
    assert said(read["ses_s_stage0_large"]) == ["Step 1", "Step 2", "Ok"]
    assert said(read["ses_s_stage0_small"]) == ["Hello", "Found 2 files."]
    assert said(read["session-001"])[0] == "Hello OpenCode"
    assert said(read["session-003"]) == ["Global session user message"]
    assert read["session-002"] == []  # a child session whose messages were not kept
    # v0.1 tree: parts flat in part/, naming their message; `success` is a finished tool.
    drift = read["ses_s_stage0_drift"]
    assert [d.kind for d in drift[1].documents] == ["assistant_text", "tool_input", "tool_output"]
    large = read["ses_s_stage0_large"]
    kinds = [(d.kind, d.tool_name) for m in large for d in m.documents]
    assert ("tool_error", "bash") in kinds  # completed, but exit 1
    everything = " ".join(d.text for m in large for d in m.documents)
    assert "Investigating" not in everything  # reasoning
    assert "Command failed with exit code" not in everything  # synthetic text
    child = opencode.FORMAT.info(files["session-002"])
    assert child.subagent and child.parent_id == "session-001"
    assert opencode.FORMAT.info(files["ses_s_stage0_drift"]).workspace_root == "/tmp/drift"


def test_fixture_tree_is_found_by_scan(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "opencode", tmp_path / "opencode")
    auto = {(d.path.stem, d.format) for d in scan(resolve_root(tmp_path))}
    assert {(stem, "opencode") for stem in ("ses_s_stage0_large", "session-002")} <= auto
    # Message and part files are never sources of their own.
    assert all(fmt == "opencode" for _, fmt in auto) and len(auto) == 6


@pytest.mark.parametrize("layout", ["tree", "db"])
def test_branch_rules_tools_and_subagents(layout: str, tmp_path: Path) -> None:
    found = by_session(layout, build(layout, tmp_path / "opencode"))
    assert set(found) == {"ses_a", "ses_b", "ses_c", "ses_d"}
    main = found["ses_a"]
    assert [m.role for m in main] == ["user", "assistant"]  # msg_a3 on are reverted
    words = " ".join(m.text() for ms in found.values() for m in ms)
    for hidden in ("walrus", "secretthought", "injectedcontext", "summarytext"):
        assert hidden not in words
    kinds = {(d.tool_name, d.kind) for d in main[1].documents if d.tool_name}
    assert kinds == {
        ("bash", "tool_input"),
        ("bash", "tool_error"),
        ("read", "tool_input"),
        ("read", "tool_error"),
        ("grep", "tool_input"),
        ("grep", "tool_output"),
    }
    assert [m.subagent for m in found["ses_b"]] == [True]
    assert not any(m.subagent for m in found["ses_c"])  # a fork is a session of its own
    assert said(found["ses_c"]) == ["why does zebrafish fail", "forked ocelot"]
    assert said(found["ses_d"]) == ["after the compaction ibex"]
    assert main[0].created_at == T0


@pytest.fixture
def data_home() -> Path:
    """OpenCode's data directory under the fake home (``$XDG_DATA_HOME`` unset)."""
    return Path.home() / ".local" / "share" / "opencode"


@pytest.mark.parametrize("layout", ["tree", "db"])
def test_default_root_search_end_to_end(layout: str, data_home: Path, cli: CliRun) -> None:
    build(layout, data_home)
    # Snapshots (git trees of the user's projects) are never scanned, whatever they hold.
    write_json(data_home / "snapshot" / "repo" / "session" / "p" / "ses_trap.json", {"id": "x"})
    before = tree_hashes(data_home)
    out = as_json(cli("index", "--json"))
    assert out["stats"]["failed"] == 0 and str(data_home.resolve()) in out["roots"]

    def hits(query: str, *extra: str) -> list[dict[str, Any]]:
        return list(as_json(cli("search", query, "--json", *extra))["hits"])

    found = hits("zebrafish")
    assert {(h["sourceFormat"], h["sessionId"]) for h in found} == {
        ("opencode", "ses_a"),
        ("opencode", "ses_c"),
    }
    assert {h["sessionTitle"] for h in found} == {
        "Fix the flaky test",
        "Fix the flaky test (fork #1)",
    }
    assert [h["kind"] for h in hits("quokka")] == ["tool_error"]
    assert hits("walrus") == [] and hits("walrus", "--include-subagents") == []
    assert hits("narwhal") == []  # a sub-agent session, left out by default
    assert [h["sessionId"] for h in hits("narwhal", "--include-subagents")] == ["ses_b"]
    assert tree_hashes(data_home) == before
    listed = as_json(cli("sources", "--json", cache=False))
    (row,) = [r for r in listed["roots"] if r["path"] == str(data_home.resolve())]
    assert row["format"] == "opencode"
    assert row["formats"] == {"opencode": 1 if layout == "db" else 4}


def test_migrated_tree_beside_the_database_is_not_read(tmp_path: Path) -> None:
    data = tmp_path / "opencode"
    write_tree(data / "storage", sessions())
    write_db(data / "opencode.db", sessions())
    assert [d.path.name for d in scan(resolve_root(f"{data}:opencode"))] == ["opencode.db"]
    assert [d.path.name for d in scan(resolve_root(tmp_path))] == ["opencode.db"]


def test_tree_reindex_finds_an_appended_message_and_a_new_revert(
    tmp_path: Path, cli: CliRun
) -> None:
    data = build("tree", tmp_path / "opencode")
    root = f"{data}:opencode"
    as_json(cli("index", "--root", root, "--json"))
    storage = data / "storage"
    write_json(storage / "message" / "ses_c" / "msg_c3.json", {"id": "msg_c3", "role": "assistant"})
    part = {"id": "prt_c3", "messageID": "msg_c3", **text("a pangolin appears")}
    write_json(storage / "part" / "msg_c3" / "prt_c3.json", part)
    as_json(cli("index", "--root", root, "--json"))
    found = as_json(cli("search", "pangolin", "--json"))["hits"]
    assert [(h["sessionId"], h["messageIndex"]) for h in found] == [("ses_c", 2)]
    # The person reverts to the fork's second prompt: everything from it on is gone.
    session_file = storage / "session" / "proj_1" / "ses_c.json"
    info = json.loads(session_file.read_text())
    write_json(session_file, {**info, "revert": {"messageID": "msg_c2"}})
    as_json(cli("index", "--root", root, "--json"))
    assert as_json(cli("search", "pangolin", "--json"))["hits"] == []
    assert as_json(cli("search", "ocelot", "--json"))["hits"] == []


def test_database_reindex_finds_an_appended_message(tmp_path: Path, cli: CliRun) -> None:
    data = build("db", tmp_path / "opencode")
    root = f"{data}:opencode"
    as_json(cli("index", "--root", root, "--json"))
    agent = sqlite3.connect(data / "opencode.db")
    with agent:
        pangolin = message("msg_c3", "assistant", [text("a pangolin")])
        insert_message(agent, "ses_c", pangolin, T0 + 2002)
    agent.close()
    as_json(cli("index", "--root", root, "--json"))
    found = as_json(cli("search", "pangolin", "--json"))["hits"]
    # After ses_a's two effective messages, ses_b's one and ses_c's first two.
    assert [(h["sessionId"], h["messageIndex"]) for h in found] == [("ses_c", 5)]


def test_database_read_only_while_the_agent_writes(tmp_path: Path) -> None:
    db_path = build("db", tmp_path / "opencode") / "opencode.db"
    # Not running: nothing beside the database, and nothing is created or changed.
    before = tree_hashes(db_path.parent)
    assert sorted(before) == [str(db_path)]
    assert len(read_all(opencode.FORMAT, db_path)) == 8
    assert tree_hashes(db_path.parent) == before

    # Running: the agent writes while we read, and never waits for us.
    def write(agent: sqlite3.Connection, n: int) -> None:
        words = ["uncommitted yak", "more"][n]
        insert_message(
            agent, "ses_c", message(f"msg_c{3 + n}", "user", [text(words)]), T0 + 2002 + n
        )

    during, interrupted = read_beside_a_writer(opencode.FORMAT, db_path, write)
    assert "uncommitted yak" not in said(during)
    assert said(interrupted)[-4:-1] == ["forked ocelot", "uncommitted yak", "more"]
