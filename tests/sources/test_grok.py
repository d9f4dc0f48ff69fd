"""Grok Build: chat histories with their session summary, under the default root and,
by the summary beside them, under any root."""

from __future__ import annotations

from pathlib import Path

from convodex.sources.registry import FORMATS
from helpers import FIXTURES, CliRun, read_all
from sources.agents import Agent, Placed, check_any_root, check_default_root

GROK = FIXTURES / "grok"
SID = "019f6851-7ec4-7ef0-97d3-03f3eee38755"
AUDIT = "019f6000-0000-7000-8000-000000000001"
ENCODED = "%2Fworkspace%2Fgrok-worktrees%2Fparser-audit"

AGENT = Agent(
    name="grok",
    root=".grok/sessions",
    placed=[
        Placed(
            GROK / "agent-sessions" / "chat_history.jsonl",
            f"%2Ftmp%2Fproject/{SID}/chat_history.jsonl",
        ),
        Placed(GROK / "agent-sessions" / "summary.json", f"%2Ftmp%2Fproject/{SID}/summary.json"),
        Placed(GROK / "agentsview" / "current" / ENCODED / AUDIT, f"{ENCODED}/{AUDIT}"),
    ],
    said=[
        ("user_text", "summarize"),
        ("assistant_text", "file"),
        ("tool_input", "run_terminal_cmd"),
        ("tool_output", "fixture"),
    ],
    resume=f"grok --resume {SID}",
    session=SID,
)


def test_found_under_the_default_root(cli: CliRun) -> None:
    check_default_root(AGENT, cli)


def test_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(AGENT, tmp_path, cli)


def test_context_is_not_typed_text_and_results_name_their_call() -> None:
    path = GROK / "agent-sessions" / "chat_history.jsonl"
    messages = read_all(FORMATS["grok"], path)
    typed = [m.text() for m in messages if m.role == "user" and m.documents]
    assert typed[0] == "Read hello.py and summarize what it prints without editing files."
    assert not any("Workspace Path" in t for t in typed)  # environment context
    results = [d for m in messages for d in m.documents if d.kind in ("tool_output", "tool_error")]
    assert results and results[0].tool_name == "read_file"
    info = FORMATS["grok"].info(path)
    assert (info.session_id, info.title) == (SID, "Read hello.py and summarize what it prints")
