"""GitHub Copilot CLI event logs: messages, tool results and errors, sub-agent events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from convodex.sources.copilot_cli import FORMAT
from convodex.sources.discover import FORMATS
from helpers import FIXTURES, hits, kinds, read_all, shown, source_row, write_jsonl

COPILOT = FIXTURES / "copilot-cli"
SID = "c0ffee00-1111-2222-3333-444455556666"


def event(kind: str, eid: str, parent: str | None, **data: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "data": data,
        "id": eid,
        "timestamp": "2026-03-26T17:50:35.000Z",
        "parentId": parent,
    }


def events() -> list[dict[str, Any]]:
    call = {"toolCallId": "call_1", "name": "bash", "arguments": {"command": "cargo fennel"}}
    return [
        event(
            "session.start",
            "e1",
            None,
            sessionId=SID,
            startTime="2026-03-26T17:50:34.263Z",
            context={"cwd": "/srv/fennel"},
        ),
        event("user.message", "e2", "e1", content="build the fennel crate"),
        event("assistant.message", "e3", "e2", content="Building.", toolRequests=[call]),
        event("tool.execution_start", "e4", "e3", toolCallId="call_1", toolName="bash"),
        event(
            "tool.execution_complete",
            "e5",
            "e4",
            toolCallId="call_1",
            success=False,
            result={"content": "linker exploded"},
        ),
        event("subagent.started", "e6", "e5", toolCallId="call_2", agentName="explore"),
        event(
            "assistant.message",
            "e7",
            "e6",
            parentToolCallId="call_2",
            content="subagentonlyword",
            toolRequests=[],
        ),
        event("assistant.reasoning", "e8", "e7", content="reasoningonlyword"),
        event("assistant.message", "e9", "e8", content="Fixed the linker.", toolRequests=[]),
    ]


def test_every_fixture_reads_and_loads_the_same() -> None:
    for path in sorted(COPILOT.rglob("*.jsonl")):
        assert read_all(FORMAT, path), path
    large = read_all(FORMAT, COPILOT / "agent-sessions-large.jsonl")
    assert shown(large)[:2] == ["Step 1", "Ok"]
    assert kinds(large) == {"user_text", "assistant_text", "tool_input", "tool_output"}
    drift = read_all(FORMAT, COPILOT / "agent-sessions-schema_drift.jsonl")
    assert "tool_error" in kinds(drift)  # `success: false` without any request before it
    small = read_all(FORMAT, COPILOT / "agent-sessions-small.jsonl")
    assert small[-1].subagent and not small[0].subagent  # sub-agent events come last
    current = next(COPILOT.rglob("events.jsonl"))
    info = FORMAT.info(current)
    assert (info.session_id, info.workspace_root) == (current.parent.name, "/tmp/project")
    assert shown(read_all(FORMAT, current))[-1] == "The directory contains file1 and file2."


def test_tools_errors_and_sub_agent_events(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / SID / "events.jsonl", events())
    (tmp_path / SID / "workspace.yaml").write_text(f"id: {SID}\nsummary: Fennel build\n")
    messages = read_all(FORMAT, path)
    main = [m for m in messages if not m.subagent]
    assert shown(main) == [
        "build the fennel crate",
        'Building.\nbash {"command":"cargo fennel"}',
        "bash linker exploded",
        "Fixed the linker.",
    ]
    assert [d.kind for d in main[2].documents] == ["tool_error"]
    assert [m.text() for m in messages if m.subagent] == ["subagentonlyword"]
    info = FORMAT.info(path)
    assert (info.session_id, info.title, info.workspace_root) == (
        SID,
        "Fennel build",
        "/srv/fennel",
    )


def test_default_roots_search_and_sources(cli) -> None:  # type: ignore[no-untyped-def]
    state = Path.home() / ".copilot" / "session-state"
    write_jsonl(state / SID / "events.jsonl", events())
    legacy = [
        event("session.start", "l1", None, sessionId="legacy-1"),
        event("user.message", "l2", "l1", content="legacy layout kohlrabi"),
    ]
    write_jsonl(state / "legacy-1.jsonl", legacy)
    cli("index", "--json")
    assert [(h["sourceFormat"], h["sessionId"]) for h in hits(cli, "fennel crate")] == [
        ("copilot_cli", SID)
    ]
    assert [h["sessionId"] for h in hits(cli, "kohlrabi")] == ["legacy-1"]
    (error,) = hits(cli, "linker exploded", "--kind", "tool_error")
    assert error["toolName"] == "bash"
    assert hits(cli, "subagentonlyword") == []  # sub-agent work: only on request
    assert len(hits(cli, "subagentonlyword", "--include-subagents")) == 1
    assert hits(cli, "reasoningonlyword", "--include-subagents") == []
    assert source_row(cli, state)["formats"] == {"copilot_cli": 2}


def test_agent_name_and_resume_template() -> None:
    assert FORMATS["copilot_cli"] is FORMAT
    assert FORMAT.resume == "copilot --resume={id}"
