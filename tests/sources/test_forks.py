"""Agents that write another agent's format (TRAE CLI: Codex; iFlow: Claude Code;
OpenClaw: Pi), each found under its own name by content or by place."""

from __future__ import annotations

from pathlib import Path

import pytest

from convodex.sources.discover import detect
from convodex.sources.registry import FORMATS
from helpers import FIXTURES, CliRun, read_all
from sources.agents import Agent, Placed, check_any_root, check_default_root

TRAE_ID = "019fbcca-9fd4-7d20-83dc-0762b2f839b3"
IFLOW_FILE = "session-5de701fc-7454-4858-a249-95cac4fd3b51.jsonl"
OPENCLAW_ID = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"

AGENTS = {
    "trae": Agent(
        name="trae",
        root=".trae/cli/sessions",
        placed=[
            Placed(
                FIXTURES / "trae" / "agentsview-rollout_subagent.jsonl",
                f"2026/08/01/rollout-2026-08-01T18-07-04-{TRAE_ID}.jsonl",
            )
        ],
        said=[
            ("user_text", "Explore"),
            ("assistant_text", "parsing"),
            ("tool_input", "explorer"),
            ("tool_output", "codex_provider.go"),
        ],
        resume=f"traex resume {TRAE_ID}",
        session=TRAE_ID,
        subagent_word="Explore",  # the sample is a sub-agent's rollout
    ),
    "iflow": Agent(
        name="iflow",
        root=".iflow/projects",
        placed=[Placed(FIXTURES / "iflow" / "agentsview" / IFLOW_FILE, f"C--exp-app/{IFLOW_FILE}")],
        said=[
            ("user_text", "DOCKER_API_VERSION"),
            ("assistant_text", "lib.rs"),
            ("tool_input", "absolute_path"),
            ("tool_output", "Yew"),
        ],
        resume="iflow --resume",
        session=IFLOW_FILE.removesuffix(".jsonl"),
    ),
    "openclaw": Agent(
        name="openclaw",
        root=".openclaw/agents",
        placed=[
            Placed(
                FIXTURES / "openclaw" / "deja-vu" / "agents" / "main" / "sessions", "main/sessions"
            ),
            Placed(
                FIXTURES / "openclaw" / "agent-sessions-large.jsonl", "work/sessions/large.jsonl"
            ),
        ],
        said=[
            ("user_text", "conformance"),
            ("assistant_text", "Gathering"),
            ("tool_input", "edit_file"),
            ("tool_output", "file1"),
        ],
        resume=None,
        session=OPENCLAW_ID,
    ),
}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_found_under_the_default_root(agent: str, cli: CliRun) -> None:
    check_default_root(AGENTS[agent], cli)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_found_under_any_root(agent: str, tmp_path: Path, cli: CliRun) -> None:
    spec = AGENTS[agent]
    if agent == "openclaw":  # known by its layout: <agent>/sessions under agents/
        spec = Agent(
            **{
                **spec.__dict__,
                "root": "",
                "placed": [Placed(p.sample, f"agents/{p.where}") for p in spec.placed],
            }
        )
    check_any_root(spec, tmp_path, cli)
    placed = tmp_path / "copied-elsewhere" / spec.placed[0].where
    if placed.is_dir():
        placed = next(placed.glob("*.jsonl"))
    assert detect(placed, placed.stat().st_ino, None) == agent


def test_iflow_streamed_siblings_are_one_branch() -> None:
    """iFlow writes the parts of one answer as siblings of one parent: not forks."""
    messages = read_all(FORMATS["iflow"], FIXTURES / "iflow" / "agentsview" / IFLOW_FILE)
    calls = [d for m in messages for d in m.documents if d.kind == "tool_input"]
    assert len(calls) >= 7  # every read_file and replace call of the run
    assert messages[0].role == "user" and messages[-1].role == "assistant"


def test_openclaw_tool_results_under_their_call_stay_on_the_branch() -> None:
    """OpenClaw names a tool call's id as its result's parent."""
    messages = read_all(FORMATS["openclaw"], FIXTURES / "openclaw" / "agent-sessions-large.jsonl")
    assert [m.role for m in messages if m.documents][:3] == ["user", "assistant", "tool"]
    assert "Open /tmp/large and run status" in messages[0].text()
