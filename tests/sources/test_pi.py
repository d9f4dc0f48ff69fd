"""Pi sessions: the branch Pi continues from, compactions, tools, default roots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from convodex.sources.discover import FORMATS
from convodex.sources.pi import FORMAT
from helpers import FIXTURES, hits, kinds, read_all, shown, source_row, write_jsonl

SID = "019e2222-aaaa-7bbb-8ccc-000000000001"


def entry(eid: str, parent: str | None, role: str, content: Any, **more: Any) -> dict[str, Any]:
    message = {"role": role, "content": content, "timestamp": 1778547747671, **more}
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-05-12T01:02:27.673Z",
        "message": message,
    }


def text(words: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": words}]


def session(folder: Path) -> Path:
    """A branch abandoned for a newer one, a compaction, tools, a name."""
    return write_jsonl(
        folder / f"2026-05-12T01-02-27-657Z_{SID}.jsonl",
        [
            {
                "type": "session",
                "version": 3,
                "id": SID,
                "timestamp": "2026-05-12T01:02:27.657Z",
                "cwd": "/srv/pi-app",
                "parentSession": "/x/2026-05-01T00-00-00-000Z_parent-id.jsonl",
            },
            {"type": "model_change", "id": "m0", "parentId": None, "provider": "p", "modelId": "x"},
            entry("u1", "m0", "user", text("start the aubergine refactor")),
            entry(
                "a1",
                "u1",
                "assistant",
                [
                    {"type": "thinking", "thinking": "privatethoughtword"},
                    {
                        "type": "toolCall",
                        "id": "t1",
                        "name": "bash",
                        "arguments": {"command": "make aubergine"},
                    },
                ],
            ),
            entry(
                "r1",
                "a1",
                "toolResult",
                text("make: *** No rule to make target"),
                toolCallId="t1",
                toolName="bash",
                isError=True,
            ),
            entry("a2", "r1", "assistant", text("abandonedbranchword")),
            # The person went back to r1 in /tree and continued from there.
            {
                "type": "branch_summary",
                "id": "b1",
                "parentId": "r1",
                "fromId": "a2",
                "summary": "branchsummaryword",
            },
            entry("a3", "b1", "assistant", text("compactedspanword kept on disk")),
            {
                "type": "compaction",
                "id": "c1",
                "parentId": "a3",
                "summary": "compactsummaryword",
                "firstKeptEntryId": "a3",
                "tokensBefore": 100,
            },
            {
                "type": "message",
                "id": "x1",
                "parentId": "c1",
                "timestamp": "2026-05-12T01:03:00Z",
                "message": {
                    "role": "bashExecution",
                    "command": "ls nope",
                    "output": "ls: nope",
                    "exitCode": 2,
                    "timestamp": 1778547780000,
                },
            },
            entry("u2", "x1", "user", text("after the compaction")),
            {"type": "session_info", "id": "n1", "parentId": "u2", "name": "Aubergine"},
        ],
    )


def test_fixture_reads_and_loads_the_same() -> None:
    path = FIXTURES / "pi" / "agent-sessions-small.jsonl"
    messages = read_all(FORMAT, path)
    assert shown(messages) == [
        "Read hello.py and summarize what it prints without editing files.",
        "hello.py prints a fixture greeting.",
        "Add one concise follow-up sentence.",
        "hello.py prints a fixture greeting.",
    ]  # the two compaction entries add no message
    info = FORMAT.info(path)
    assert info.session_id == "019e19b4-eb48-746a-aa6b-8dfcfa37954b"
    assert info.workspace_root == "/tmp/as-agent-fixture/project"


def test_branch_compaction_and_tools(tmp_path: Path) -> None:
    path = session(tmp_path)
    messages = read_all(FORMAT, path)
    texts = " ".join(shown(messages))
    assert "abandonedbranchword" not in texts  # on the branch Pi left
    assert "compactedspanword" in texts  # summarised, still on disk and on the branch
    for summary in ("compactsummaryword", "branchsummaryword", "privatethoughtword"):
        assert summary not in texts
    assert kinds(messages) == {"user_text", "assistant_text", "tool_input", "tool_error"}
    bash = next(m for m in messages if m.created_at == 1778547780000)
    assert [d.kind for d in bash.documents] == ["tool_input", "tool_error"]  # `!ls nope`
    info = FORMAT.info(path)
    assert (info.session_id, info.title, info.parent_id) == (SID, "Aubergine", "parent-id")


def test_default_root_search_and_sources(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    sessions = Path.home() / ".pi" / "agent" / "sessions"
    session(sessions / "--work-pi-app--")
    cli("index", "--json")
    assert [h["sourceFormat"] for h in hits(cli, "compactedspanword")] == ["pi"]
    assert hits(cli, "abandonedbranchword") == []
    assert hits(cli, "compactsummaryword") == []  # the summary is not a message
    (error,) = hits(cli, "rule target", "--kind", "tool_error")
    assert (error["sessionId"], error["toolName"]) == (SID, "bash")
    assert source_row(cli, sessions)["formats"] == {"pi": 1}


def test_pi_coding_agent_dir_moves_the_root(tmp_path: Path, monkeypatch, cli) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi-agent"))
    session(tmp_path / "pi-agent" / "sessions" / "--work--")
    cli("index", "--json")
    assert [h["sourceFormat"] for h in hits(cli, "aubergine", "--kind", "user_text")] == ["pi"]


def test_agent_name_and_resume_template() -> None:
    assert FORMATS["pi"] is FORMAT
    assert FORMAT.resume == "pi --session {id}"
