"""Qwen Code chats: the active branch after rewinds, tools, sub-agents, default roots."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from convodex.errors import SourceError
from convodex.sources.base import Budget, ReadResult
from convodex.sources.discover import FORMATS
from convodex.sources.qwen import FORMAT
from helpers import FIXTURES, as_json, hits, kinds, read_all, shown, source_row, write_jsonl

QWEN = FIXTURES / "qwen" / "agent-sessions"
SID = "019f1111-0000-7000-8000-000000000001"


def rec(uuid: str, parent: str | None, kind: str, **fields: Any) -> dict[str, Any]:
    record = {
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SID,
        "timestamp": "2026-02-01T10:00:00.000Z",
        "type": kind,
        "cwd": "/srv/app",
        "version": "0.21.13",
    }
    record.update(fields)
    return record


def said(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"message": {"role": role, "parts": list(parts)}}


def test_every_fixture_reads_and_loads_the_same() -> None:
    plain = read_all(FORMAT, QWEN / "019f0000-0000-7000-8000-000000000001.jsonl")
    assert shown(plain)[:2] == [
        "Inspect the synthetic fixture.",
        'read_file {"path":"/tmp/as-qwen-fixture/project/README.md"}',
    ]
    texts = " ".join(shown(plain))
    assert "Synthetic hook context" not in texts  # hook output appended to the prompt
    assert "I should read the synthetic file" not in texts  # a thought
    assert "background notification" not in texts  # written by the runtime
    assert kinds(plain) == {"user_text", "assistant_text", "tool_input", "tool_output"}
    compact = read_all(FORMAT, QWEN / "019f0000000070008000000000000003.jsonl")
    assert shown(compact) == ["Inspect a compact-ID synthetic fixture."]
    redacted = ReadResult(0, 0)
    assert [
        m.role for m in FORMAT.read(QWEN / "system_telemetry.jsonl", redacted, Budget.from_env())
    ] == []
    assert redacted.errors == []


def test_labelled_malformed_files_are_source_or_line_errors() -> None:
    # Records naming another session than the file: not this session's transcript.
    with pytest.raises(SourceError, match="another session"):
        list(
            FORMAT.read(
                QWEN / "019f0000-0000-7000-8000-000000000002.jsonl",
                ReadResult(0, 0),
                Budget.from_env(),
            )
        )
    # Objects glued on one line are split back into their records, as Qwen Code does.
    glued = ReadResult(0, 0)
    path = QWEN / "019f0000-0000-7000-8000-000000000005.jsonl"
    messages = list(FORMAT.read(path, glued, Budget.from_env()))
    assert glued.errors == []
    assert shown(read_all(FORMAT, path)) == [
        'Inspect {"glued": "objects"} safely.',
        "Recovered both synthetic objects.",
    ]
    assert messages[1].offset > messages[0].offset  # each object keeps its own span


def test_rewind_fixture_keeps_only_the_active_branch() -> None:
    path = QWEN / "019f0000-0000-7000-8000-000000000004.jsonl"
    texts = shown(read_all(FORMAT, path))
    assert "Discarded branch answer." not in " ".join(texts)
    assert texts[:2] == ["Begin the active-chain fixture.", "Continue from the rewound branch."]
    assert texts[2].startswith("Active branch answer.")  # fragments of one uuid merged
    info = FORMAT.info(path)
    assert info.title == "Active branch title"  # not the rewound branch's title
    assert info.workspace_root == "/tmp/as-qwen-fixture/new-project"


def session(root: Path) -> Path:
    """A hand-written chat: a rewound turn, a compression, a failing tool, a sidechain."""
    return write_jsonl(
        root / "projects" / "-work-app" / "chats" / f"{SID}.jsonl",
        [
            rec("u1", None, "user", **said("user", {"text": "plan the tangerine migration"})),
            rec("a1", "u1", "assistant", **said("model", {"text": "abandonedbranchword"})),
            rec("r1", "u1", "system", subtype="rewind", systemPayload={"truncatedCount": 1}),
            rec("u2", "r1", "user", **said("user", {"text": "retry with compactedspanword"})),
            rec(
                "a2",
                "u2",
                "assistant",
                **said(
                    "model",
                    {
                        "functionCall": {
                            "id": "c1",
                            "name": "run_shell_command",
                            "args": {"command": "make quasar"},
                        }
                    },
                ),
            ),
            rec(
                "t2",
                "a2",
                "tool_result",
                toolCallResult={"status": "error"},
                **said(
                    "user",
                    {
                        "functionResponse": {
                            "id": "c1",
                            "name": "run_shell_command",
                            "response": {"error": "quasar target missing"},
                        }
                    },
                ),
            ),
            rec(
                "s1",
                "t2",
                "system",
                subtype="chat_compression",
                systemPayload={
                    "info": {},
                    "compressedHistory": [{"role": "user", "parts": [{"text": "summaryonlyword"}]}],
                },
            ),
            rec(
                "x1",
                "s1",
                "assistant",
                isSidechain=True,
                agentId="explore-1",
                **said("model", {"text": "sidechainonlyword"}),
            ),
            rec("a3", "s1", "assistant", **said("model", {"text": "done after compression"})),
            rec(
                "n1",
                "a3",
                "system",
                subtype="custom_title",
                systemPayload={"customTitle": "Tangerine"},
            ),
        ],
    )


def test_hand_written_branch_rules_tools_and_sidechain(tmp_path: Path) -> None:
    path = session(tmp_path / "qwen")
    messages = read_all(FORMAT, path)
    texts = " ".join(shown(messages))
    assert "abandonedbranchword" not in texts and "summaryonlyword" not in texts
    assert "compactedspanword" in texts and "done after compression" in texts
    (error,) = [d for m in messages for d in m.documents if d.kind == "tool_error"]
    assert error.tool_name == "run_shell_command" and "quasar target missing" in error.text
    # Sub-agent work in the parent's file is off the branch; it follows, marked.
    assert [m.text() for m in messages if m.subagent] == ["sidechainonlyword"]
    assert messages[-1].subagent and not any(m.subagent for m in messages[:-1])
    info = FORMAT.info(path)
    assert (info.session_id, info.title, info.workspace_root) == (SID, "Tangerine", "/srv/app")


def test_a_file_of_sidechain_records_is_a_sub_agent_session(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    agent = "019f2222-0000-7000-8000-000000000002"
    records = [
        {
            **rec("s1", None, "user", **said("user", {"text": "explore the nebulawordx"})),
            "sessionId": agent,
            "isSidechain": True,
        },
    ]
    path = write_jsonl(tmp_path / "qwen" / "chats" / f"{agent}.jsonl", records)
    assert FORMAT.info(path).subagent
    assert [m.subagent for m in read_all(FORMAT, path)] == [True]
    cli("index", "--root", f"{tmp_path / 'qwen'}:qwen", "--json")
    assert hits(cli, "nebulawordx") == []
    assert [h["sessionId"] for h in hits(cli, "nebulawordx", "--include-subagents")] == [agent]


def test_default_roots_search_and_sources(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    home = Path.home()
    session(home / ".qwen")
    legacy = (
        home / ".qwen" / "tmp" / "0f3c9a" / "chats" / "019f0000-0000-7000-8000-000000000001.jsonl"
    )
    legacy.parent.mkdir(parents=True)
    shutil.copy(QWEN / legacy.name, legacy)  # the Gemini-CLI-era layout
    (home / ".qwen" / "projects" / "-work-app" / "memory.jsonl").write_text('{"note": 1}\n')
    cli("index", "--json")
    found = hits(cli, "compactedspanword")
    assert [(h["sourceFormat"], h["sessionId"]) for h in found] == [("qwen", SID)]
    assert hits(cli, "abandonedbranchword") == []
    assert hits(cli, "sidechainonlyword") == []
    assert len(hits(cli, "sidechainonlyword", "--include-subagents")) == 1
    assert [h["sourceFormat"] for h in hits(cli, "synthetic fixture", "--kind", "user_text")] == [
        "qwen"
    ]
    row = source_row(cli, home / ".qwen" / "projects")
    assert (row["format"], row["formats"]) == ("qwen", {"qwen": 1})  # memory.jsonl is no chat
    assert source_row(cli, home / ".qwen" / "tmp")["formats"] == {"qwen": 1}
    archived = home / ".qwen" / "projects" / "-work-app" / "chats" / "archive" / legacy.name
    archived.parent.mkdir()
    shutil.copy(legacy, archived)
    assert (
        FORMAT.info(archived).archived
        and source_row(cli, home / ".qwen" / "projects")["archived"] == 1
    )


def test_qwen_home_moves_the_projects_root(tmp_path: Path, monkeypatch, cli) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "elsewhere"))
    session(tmp_path / "elsewhere")
    cli("index", "--json")
    assert [h["sourceFormat"] for h in hits(cli, "tangerine", "--kind", "user_text")] == ["qwen"]


def test_agent_name_and_resume_template() -> None:
    assert FORMATS["qwen"] is FORMAT
    assert FORMAT.resume == "qwen --resume {id}"


def test_a_bad_source_fails_alone_through_the_indexer(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "project" / "chats"
    shutil.copytree(QWEN, root)
    out = as_json(cli("index", "--root", f"{root}:qwen", "--json"))
    # Five chats named by session id and a telemetry log (read, no messages); the chat
    # whose records name another session fails.
    assert (out["stats"]["indexed"], out["stats"]["failed"]) == (5, 1)
    assert hits(cli, "Recovered both synthetic objects")  # the glued file is searchable


def test_a_chat_whose_name_is_no_session_id_is_still_read(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Qwen keeps chats in ``chats/``; a renamed chat (a backup, an older release's
    name) was skipped without a count: every ``.jsonl`` there is a chat."""
    chats = tmp_path / "project" / "chats"
    chats.mkdir(parents=True)
    source = QWEN / "019f0000-0000-7000-8000-000000000001.jsonl"
    shutil.copy(source, chats / "saved-before-upgrade.jsonl")
    out = as_json(cli("index", "--root", f"{tmp_path}:qwen", "--json"))
    assert (out["stats"]["indexed"], out["stats"]["failed"]) == (1, 0)
    assert hits(cli, "Inspect the synthetic fixture")
