"""Records written without a newline between them (``{…}{…}`` on one line), a writer
fault several agents have: every JSONL reader splits them back into their records
(``jsonl.glued``), so gluing a file's lines changes none of its messages, none of
its listing facts (session id, title, workspace, start) and not what detection
takes it for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convodex.sources.base import Budget, ReadResult
from convodex.sources.discover import detect
from convodex.sources.registry import FORMATS
from helpers import FIXTURES, read_all

# Real samples of every JSONL format (format, sample): each dialect a reader tells
# apart by its first record has its own.
SAMPLES = [
    ("claude_code", "claude-code/agent-sessions-large.jsonl"),
    ("codex", "codex/agent-sessions-large.jsonl"),
    ("gemini", "gemini/agent-sessions-jsonl_v040.jsonl"),
    ("copilot_cli", "copilot-cli/agent-sessions-large.jsonl"),
    ("droid", "droid/agent-sessions-session_store_large.jsonl"),
    ("droid", "droid/agent-sessions-stream_json_large.jsonl"),
    ("pi", "pi/agent-sessions-small.jsonl"),
    ("cursor", "cursor/agent-sessions-large.jsonl"),
    ("qwen", "qwen/agent-sessions/019f0000-0000-7000-8000-000000000001.jsonl"),
    (
        "copilot_vscode",
        "handwritten/copilot-vscode/User/workspaceStorage/5f2c0a9e1b7d/chatSessions/"
        "7d3e9b10-5c1f-4e2a-9d7b-0a1b2c3d4e5f.jsonl",
    ),
    ("kimi", "kimi/agent-sessions-assistant_tools.jsonl"),
    ("grok", "grok/agent-sessions/chat_history.jsonl"),
    ("kiro", "kiro/irrlicht/2-2_auto-executed-tool-call/transcript.jsonl"),
    ("mistral_vibe", "mistral-vibe/agentsview/session_with_tools/messages.jsonl"),
    (
        "antigravity",
        "antigravity/codeburn/brain/fixture-current-cli/.system_generated/logs/transcript.jsonl",
    ),
    ("iflow", "iflow/agentsview/session-5de701fc-7454-4858-a249-95cac4fd3b51.jsonl"),
    ("openclaw", "openclaw/agent-sessions-small.jsonl"),
    ("trae", "trae/agentsview-rollout_subagent.jsonl"),
    ("session_log", ""),  # written by the test
    ("dag", ""),
]
# Formats whose files are not one record a line: nothing to glue.
NOT_JSONL = {
    "chat_export": "one JSON document (or a zip of them)",
    "cline": "JSON documents per task",
    "roo_code": "JSON documents per task",
    "kilo_code": "JSON documents per task",
    "opencode": "JSON documents or SQLite",
    "cursor_ide": "SQLite",
    "aider": "Markdown",
    "amp": "one JSON document a thread",
    "kiro_ide": "JSON documents",
    "hermes": "SQLite and JSON snapshots",
    "goose": "SQLite",
    "zed": "SQLite",
}


def test_every_jsonl_reader_is_covered() -> None:
    """A new line-oriented reader fails here until its sample is glued below."""
    assert set(FORMATS) - set(NOT_JSONL) == {fmt for fmt, _ in SAMPLES}


def native_log(tmp_path: Path) -> str:
    """convodex's own session log: a few records of every role."""
    lines = [
        {"role": "user", "content": "Which port does the server use?", "createdAt": 1},
        {"role": "assistant", "content": "It listens on 8080.", "createdAt": 2},
        {"role": "user", "content": "Move it to 9090.", "createdAt": 3},
        {"role": "assistant", "content": "Done: 9090 now.", "createdAt": 4},
    ]
    path = tmp_path / "native" / "log.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    return str(path.relative_to(FIXTURES)) if path.is_relative_to(FIXTURES) else str(path)


def dag_log(tmp_path: Path) -> Path:
    """A legacy DAG log (schema 2): messages, a rewind and a later branch."""
    records = [
        {"type": "message", "id": "m1", "msgs": [{"role": "user", "content": "plan the move"}]},
        {
            "type": "message",
            "id": "m2",
            "parent": "m1",
            "msgs": [{"role": "assistant", "content": "abandoned"}],
        },
        {"type": "rewind", "head": "main", "parent": "m1", "at": 3},
        {
            "type": "message",
            "id": "m3",
            "parent": "m1",
            "msgs": [{"role": "assistant", "content": "moved"}],
        },
        {
            "type": "message",
            "id": "m4",
            "parent": "m3",
            "msgs": [{"role": "user", "content": "thanks"}],
        },
    ]
    path = tmp_path / "dag" / "legacy.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def glue(text: str) -> str:
    """Every second line break removed: records pairwise on one line."""
    lines = text.splitlines(keepends=True)
    return "".join(line.rstrip("\n") if n % 2 == 0 else line for n, line in enumerate(lines))


@pytest.mark.parametrize(("fmt", "name"), SAMPLES)
def test_glued_records_are_split_in_every_jsonl_reader(fmt: str, name: str, tmp_path: Path) -> None:
    if name:
        sample = FIXTURES / name
    else:
        sample = dag_log(tmp_path) if fmt == "dag" else Path(native_log(tmp_path))
    # The same folder name: some readers name a session after its folder.
    plain = tmp_path / "plain" / sample.parent.name / sample.name
    path = tmp_path / "glued" / sample.parent.name / sample.name
    for where in (plain, path):
        where.parent.mkdir(parents=True)
    plain.write_bytes(sample.read_bytes())
    path.write_text(glue(sample.read_text("utf-8")), "utf-8")
    assert path.read_text("utf-8").count("\n") < sample.read_text("utf-8").count("\n")

    def seen(p: Path) -> list[tuple[str, str]]:
        return [(m.role, m.text()) for m in read_all(FORMATS[fmt], p) if m.documents]

    expected = seen(plain)
    assert expected
    assert seen(path) == expected

    def listed(p: Path) -> tuple[object, ...]:
        info = FORMATS[fmt].info(p)
        return (info.session_id, info.title, info.workspace_root, info.created_at, info.headless)

    assert listed(path) == listed(plain)
    assert detect(path, path.stat().st_ino, None) == detect(plain, plain.stat().st_ino, None)
    result = ReadResult(0, 0)
    list(FORMATS[fmt].read(path, result, Budget.from_env()))
    assert result.errors == [] or fmt == "codex"  # its sample has a bad line of its own
