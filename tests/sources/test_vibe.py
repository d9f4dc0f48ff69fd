"""Mistral Vibe: the native log's messages with Vibe's own sidecar, found under its
default root and, by the sidecar beside it, under any root."""

from __future__ import annotations

from pathlib import Path

import pytest

from convodex.sources.registry import FORMATS
from helpers import FIXTURES, CliRun, read_all
from sources.agents import Agent, Placed, check_any_root, check_default_root

VIBE = FIXTURES / "mistral-vibe"
SESSION = "def456ghi-0000-0000-0000-000000000000"

AGENT = Agent(
    name="mistral_vibe",
    root=".vibe/logs/session",
    placed=[
        Placed(VIBE / "agentsview" / "session_with_tools", "session_20260613_110000_def456"),
        # A sub-agent's trace in its parent's agents/ folder.
        Placed(
            VIBE / "irrlicht" / "3-1_foreground-subagent" / "transcript.jsonl",
            "session_20260613_110000_def456/agents/explore/messages.jsonl",
        ),
    ],
    said=[
        ("user_text", "README"),
        ("assistant_text", "sample"),
        ("tool_input", "read_file"),
        ("tool_output", "sample"),
    ],
    resume=f"vibe --resume {SESSION}",
    session=SESSION,
    subagent_word="subagent",
)


def test_found_under_the_default_root(cli: CliRun) -> None:
    check_default_root(AGENT, cli)


def test_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(AGENT, tmp_path, cli)


@pytest.mark.parametrize("scenario", ["2-3_task-list", "3-1_foreground-subagent"])
def test_real_recordings_in_order(scenario: str, tmp_path: Path) -> None:
    folder = tmp_path / "session_x"
    folder.mkdir()
    (folder / "messages.jsonl").write_bytes(
        (VIBE / "irrlicht" / scenario / "transcript.jsonl").read_bytes()
    )
    messages = read_all(FORMATS["mistral_vibe"], folder / "messages.jsonl")
    roles = [m.role for m in messages if m.documents]
    assert roles[0] == "user" and roles[-1] == "assistant" and "tool" in roles
    assert messages[-1].text() == "done"


def test_sidecar_facts() -> None:
    info = FORMATS["mistral_vibe"].info(
        VIBE / "agentsview" / "session_with_tools" / "messages.jsonl"
    )
    assert (info.session_id, info.title, info.workspace_root) == (
        SESSION,
        "Read the README file",
        "/home/user/projects/myapp",
    )
    assert info.created_at is not None and not info.subagent
