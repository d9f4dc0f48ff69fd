"""Kimi Code: per-agent wire logs under ~/.kimi-code/sessions (and, by their protocol
header, under any root); a step's parts one message, thinking never indexed, injected
reminders not typed text, sub-agents apart and resumed as their session."""

from __future__ import annotations

import shutil
from pathlib import Path

from convodex.sources.registry import FORMATS
from helpers import FIXTURES, CliRun, as_json, hits, read_all
from sources.agents import Agent, Placed, check_any_root, check_default_root

KIMI = FIXTURES / "kimi"
SESSION = "session_1bcbe023-4f7e-4971-9dc9-43b8756045b0"
FOLDER = f"wd_project_ac3bb318f98e/{SESSION}"
WIRE = KIMI / "agent-sessions-assistant_tools.jsonl"
DEJA_VU = KIMI / "deja-vu" / "sessions" / "wd_demo_0123456789ab" / "session_fixture01"

AGENT = Agent(
    name="kimi",
    root=".kimi-code/sessions",
    placed=[
        Placed(WIRE, f"{FOLDER}/agents/main/wire.jsonl"),
        Placed(KIMI / "agent-sessions-assistant_tools.state.json", f"{FOLDER}/state.json"),
        # Another session's real wire, as the sub-agent the state lists (agent-0).
        Placed(DEJA_VU / "agents" / "main" / "wire.jsonl", f"{FOLDER}/agents/agent-0/wire.jsonl"),
    ],
    said=[
        ("user_text", "nonexistent"),
        ("assistant_text", "Swift"),
        ("tool_input", "gitignore"),
        ("tool_output", "AgentSessionsLogicTests"),
        ("tool_error", "nonexistent"),
    ],
    resume=f"kimi -r {SESSION}",
    session=SESSION,
    subagent_word="jwks",
)


def test_found_under_the_default_root(cli: CliRun) -> None:
    check_default_root(AGENT, cli)
    # A sub-agent resumes as the session it ran in.
    result = cli("resume", f"{SESSION}:agent-0", "--print")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith(f"kimi -r {SESSION}")


def test_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(AGENT, tmp_path, cli)


def test_steps_in_order_with_tools_and_no_thinking() -> None:
    messages = read_all(FORMATS["kimi"], WIRE)
    said = [(m.role, [(d.kind, d.tool_name) for d in m.documents]) for m in messages]
    assert said[4:9] == [
        ("user", [("user_text", None)]),
        ("assistant", [("tool_input", "Bash")]),
        ("tool", [("tool_output", "Bash")]),  # named through its call's id
        ("assistant", [("tool_input", "Bash")]),
        ("tool", [("tool_output", "Bash")]),
    ]
    assert messages[4].text() == "run ls command"
    assert messages[4].created_at == 1785613805458  # the line's `time`, ms
    everything = "\n".join(m.text() for m in messages)
    assert "I'll use Bash to run it" not in everything  # thinking
    assert "TodoList tool has not been updated" not in everything  # an injected reminder
    # Two parallel Glob calls of one step, then both results in one tool message.
    globs = [m for m in messages if [d.tool_name for d in m.documents] == ["Glob", "Glob"]]
    assert [(m.role, [d.kind for d in m.documents]) for m in globs[:2]] == [
        ("assistant", ["tool_input", "tool_input"]),
        ("tool", ["tool_output", "tool_output"]),
    ]


def test_session_facts_from_its_state() -> None:
    info = FORMATS["kimi"].info(DEJA_VU / "agents" / "main" / "wire.jsonl")
    assert (info.session_id, info.title, info.workspace_root, info.subagent) == (
        "session_fixture01",
        "Kimi fixture: jwks cache rotation needle",
        "/home/example/work/demo-project",
        False,
    )
    assert info.created_at == 1782900000000
    messages = read_all(FORMATS["kimi"], DEJA_VU / "agents" / "main" / "wire.jsonl")
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    # Two text parts of one step are one answer; a torn last step still reads.
    assert messages[1].text().startswith("The cache keeps serving the old kid after rotateKey; ")
    assert messages[3].text() == "torn-tail mid-stream answer survives"


def test_a_malformed_line_is_counted_and_the_rest_read(tmp_path: Path, cli: CliRun) -> None:
    folder = tmp_path / "sessions" / "wd_x_0123456789ab" / "session_broken"
    shutil.copytree(DEJA_VU, folder)
    wire = folder / "agents" / "main" / "wire.jsonl"
    lines = wire.read_bytes().splitlines(keepends=True)
    wire.write_bytes(b"".join([*lines[:3], b'{"type": "context.append_message", \n', *lines[3:]]))
    out = as_json(cli("index", "--root", str(tmp_path / "sessions"), "--json"))
    assert out["stats"]["lineErrors"] == 1
    assert hits(cli, "rotateKey") and hits(cli, "mid-stream")
