"""Tool results name their tool (SPEC L2: tool name + content), at index and at search time.

Claude Code and Codex results carry only the call's id; the name comes from the call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from convodex.sources.base import Budget, ReadResult, SourceFormat
from convodex.sources.claude_code import FORMAT as CLAUDE
from convodex.sources.codex import FORMAT as CODEX
from helpers import CliRun, as_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CODEX_ROLLOUT = next((FIXTURES / "codex").rglob("rollout-2026-01-02T03-04-05-*.jsonl"))
CLAUDE_SESSION = FIXTURES / "claude-code" / "claude-code-log-representative_messages.jsonl"


def tool_results(fmt: SourceFormat, path: Path) -> list[tuple[int, str | None, str | None]]:
    """(index, name at index time, name when the message alone is loaded)."""
    out = []
    for message in fmt.read(path, ReadResult(0, 0), Budget.from_env()):
        for doc in message.documents:
            if doc.kind in ("tool_output", "tool_error"):
                alone = fmt.load(path, message.offset, message.length, message.index)
                assert alone is not None
                loaded = next(d for d in alone.documents if d.part == doc.part)
                out.append((message.index, doc.tool_name, loaded.tool_name))
    return out


@pytest.mark.parametrize(
    ("fmt", "path", "expected"),
    [
        (CODEX, CODEX_ROLLOUT, {"exec_command", "apply_patch"}),
        (CLAUDE, CLAUDE_SESSION, {"Edit", "Bash"}),
    ],
)
def test_results_are_named_after_their_call(
    fmt: SourceFormat, path: Path, expected: set[str]
) -> None:
    results = tool_results(fmt, path)
    assert results
    assert all(at_index == alone for _, at_index, alone in results)
    assert expected <= {name for _, name, _ in results}


def test_the_tool_name_is_searchable_in_tool_output(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "codex"
    root.mkdir()
    (root / CODEX_ROLLOUT.name).write_bytes(CODEX_ROLLOUT.read_bytes())
    as_json(cli("index", "--root", f"{root}:codex", "--json"))
    hits = as_json(cli("search", "apply_patch", "--kind", "tool_output", "--json"))["hits"]
    assert hits and all(h["toolName"] == "apply_patch" for h in hits)


def test_sidechains_in_a_main_file_are_sub_agent_sessions(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "claude"
    root.mkdir()
    fixture = FIXTURES / "claude-code" / "claude-code-log-sidechain_integrated.jsonl"
    (root / fixture.name).write_bytes(fixture.read_bytes())
    as_json(cli("index", "--root", f"{root}:claude-code", "--json"))
    query = ["search", "research", "--kind", "assistant_text", "--json"]
    default = as_json(cli(*query))["hits"]
    assert all(":" not in h["sessionId"] for h in default)
    everything = as_json(cli(*query, "--include-subagents"))["hits"]
    side = [h for h in everything if h["sessionId"] == f"{fixture.stem}:e1c84ba5"]
    assert side and len(everything) > len(default)
    # A sub-agent's run resumes as the session it ran in (``<id>:<run>`` cannot).
    assert {h["resumeCommand"].rsplit(" ", 1)[-1] for h in side} == {fixture.stem}
