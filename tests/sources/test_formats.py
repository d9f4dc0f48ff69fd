"""Claude Code, Codex, Gemini and chat exports on the real public fixtures.

For each: which messages are on the effective branch, that ``load`` rebuilds what
``read`` indexed, and end to end through the CLI that a word on the selected
branch is found while one only on an abandoned branch is not.
"""

from __future__ import annotations

import json
import shutil
import string
from pathlib import Path
from typing import Any

import pytest

from convodex.sources import chat_export, claude_code, codex, gemini
from convodex.sources.base import Budget, ReadResult
from convodex.sources.discover import FORMATS, detect, scan
from convodex.sources.roots import resolve_root
from helpers import FIXTURES, CliRun, as_json, read_all, shown


def test_claude_code_rewind_keeps_the_latest_branch_through_compaction() -> None:
    for name in ("dag_compact_after_rewind", "dag_compact_after_rewind_preserved"):
        path = FIXTURES / "claude-code" / f"claude-code-log-{name}.jsonl"
        texts = shown(read_all(claude_code.FORMAT, path))
        assert texts == [
            "Start",
            "Ready",
            "Second attempt",
            "Second answer",
            "Keep going",
            "Kept going",
            "After compaction",
            "Final answer",
        ]
        assert "First attempt" not in texts


def test_claude_code_tools_thinking_sidechains_and_bad_lines() -> None:
    edge = FIXTURES / "claude-code" / "claude-code-log-edge_cases.jsonl"
    result = ReadResult(0, 0)
    messages = list(claude_code.FORMAT.read(edge, result, Budget.from_env()))
    kinds = {d.kind for m in messages for d in m.documents}
    assert {"user_text", "assistant_text", "tool_input", "tool_error"} <= kinds
    assert len(result.errors) == 3  # bare string, number and array lines
    sample = FIXTURES / "claude-code" / "sessions-chronicle" / "claude_sessions"
    texts = " ".join(shown(read_all(claude_code.FORMAT, sample / "sample-session.jsonl")))
    assert "modular" in texts and "should make it more modular" not in texts  # thinking
    side = FIXTURES / "claude-code" / "claude-code-log-sidechain_integrated.jsonl"
    messages = read_all(claude_code.FORMAT, side)
    main = [m for m in messages if not m.subagent]
    sidechain = [m for m in messages if m.subagent]
    # Sidechain work is not part of the main transcript: it is its own sub-agent session.
    assert not any("I'll research" in t for t in shown(main))
    assert any("I'll research" in t for t in shown(sidechain))
    # One run of one Task call: a session named by the sub-agent's agentId.
    assert {m.session_id for m in sidechain} == {f"{side.stem}:e1c84ba5"}
    assert min(m.index for m in sidechain) == len(main)


def test_claude_code_split_message_is_one_message(tmp_path: Path) -> None:
    lines = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "go"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "msg1",
                "role": "assistant",
                "content": [{"type": "text", "text": "part one"}],
            },
        },
        {
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "a1",
            "message": {
                "id": "msg1",
                "role": "assistant",
                "content": [{"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}],
            },
        },
        {"type": "mystery-line", "anything": True},
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a2",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "content": "denied", "is_error": True}],
            },
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = ReadResult(0, 0)
    messages = list(claude_code.FORMAT.read(path, result, Budget.from_env()))
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert [d.kind for d in messages[1].documents] == ["assistant_text", "tool_input"]
    assert messages[2].documents[0].kind == "tool_error" and result.errors == []


def test_claude_code_subagents_are_labelled() -> None:
    base = FIXTURES / "claude-code" / "agent-sessions-subagent"
    child = next(base.rglob("agent-*.jsonl"))
    info = claude_code.FORMAT.info(child)
    assert info.subagent and info.parent_id == "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
    assert shown(read_all(claude_code.FORMAT, child))[0] == "Search the repo for TODO comments"


def test_codex_items_not_events_tools_and_injected_context() -> None:
    path = next((FIXTURES / "codex" / "claude-code-log" / "sessions").rglob("*1111*.jsonl"))
    messages = read_all(codex.FORMAT, path)
    assert [m.role for m in messages].count("user") == 1  # event_msg copy not indexed
    calls = [d.tool_name for m in messages for d in m.documents if d.kind == "tool_input"]
    assert calls == ["exec_command", "apply_patch", "mcp__synthetic__lookup"]
    headers = read_all(codex.FORMAT, FIXTURES / "codex" / "polylogue-tool-result-headers.jsonl")
    assert sum(d.kind == "tool_error" for m in headers for d in m.documents) >= 2
    large = read_all(codex.FORMAT, FIXTURES / "codex" / "agent-sessions-large.jsonl")
    assert not any("environment_context" in t for t in shown(large))


def test_codex_rollback_removes_turns(tmp_path: Path) -> None:
    def item(role: str, text: str) -> dict[str, Any]:
        part = "input_text" if role == "user" else "output_text"
        return {
            "type": "response_item",
            "payload": {"type": "message", "role": role, "content": [{"type": part, "text": text}]},
        }

    lines = [
        {"type": "session_meta", "payload": {"id": "x", "source": "exec"}},
        item("user", "kept question"),
        item("assistant", "kept answer"),
        item("user", "rolled question"),
        item("assistant", "rolled answer"),
        {"type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": 1}},
        item("user", "new question"),
    ]
    path = tmp_path / "rollout-x.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert shown(read_all(codex.FORMAT, path)) == ["kept question", "kept answer", "new question"]
    assert codex.FORMAT.info(path).headless


def test_codex_subagent_and_fork_links() -> None:
    child = next((FIXTURES / "codex" / "claude-code-log" / "sessions").rglob("*3333*.jsonl"))
    info = codex.FORMAT.info(child)
    assert info.subagent and info.parent_id == "22222222-2222-4222-8222-222222222222"


def test_gemini_json_jsonl_and_rewind(tmp_path: Path) -> None:
    large = read_all(gemini.FORMAT, FIXTURES / "gemini" / "agent-sessions-large.json")
    assert shown(large)[0] == "Run a command"
    assert any(d.kind == "tool_output" for m in large for d in m.documents)
    jl = read_all(gemini.FORMAT, FIXTURES / "gemini" / "agent-sessions-jsonl_v040.jsonl")
    assert shown(jl)[-1] == "Hello! I listed the files."
    lines = [
        {"sessionId": "g", "projectHash": "h"},
        {"id": "1", "type": "user", "content": "first"},
        {"id": "2", "type": "gemini", "content": "draft"},
        {"id": "3", "type": "user", "content": "rewound prompt"},
        {"$rewindTo": "3"},
        {"id": "2", "type": "gemini", "content": "rewritten"},
        {"$set": {"lastUpdated": "now"}},
        {"id": "4", "type": "user", "content": "after"},
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert shown(read_all(gemini.FORMAT, path)) == ["first", "rewritten", "after"]


def test_chat_exports_follow_the_selected_branch() -> None:
    gpt = read_all(
        chat_export.FORMAT, FIXTURES / "chatgpt-export" / "polylogue-native-conversation-v1.json"
    )
    texts = shown(gpt)
    assert "Superseded answer." not in texts and texts[-1].startswith("Final answer.")
    assert "Privacy-safe reasoning trace." not in " ".join(texts)
    assert {m.session_id for m in gpt} == {"chatgpt-fixture-conversation"}
    golden = read_all(
        chat_export.FORMAT, FIXTURES / "chatgpt-export" / "polylogue-golden-conversations.json"
    )
    assert [m.role for m in golden] == ["user", "assistant"] and golden[0].title == "Golden ChatGPT"
    rich = read_all(
        chat_export.FORMAT, FIXTURES / "claude-export" / "polylogue-native-rich-blocks-v1.json"
    )
    assert [d.kind for d in rich[1].documents] == ["tool_error"]
    assert "considering options" not in " ".join(shown(rich))


def test_claude_ai_latest_leaf(tmp_path: Path) -> None:
    conv = {
        "uuid": "c1",
        "name": "Tree",
        "chat_messages": [
            {
                "uuid": "a",
                "parent_message_uuid": "root",
                "sender": "human",
                "text": "question",
                "created_at": "2024-01-01T00:00:00Z",
            },
            {
                "uuid": "b",
                "parent_message_uuid": "a",
                "sender": "assistant",
                "text": "oldbranch",
                "created_at": "2024-01-01T00:01:00Z",
            },
            {
                "uuid": "c",
                "parent_message_uuid": "a",
                "sender": "assistant",
                "text": "newbranch",
                "created_at": "2024-01-01T00:02:00Z",
            },
        ],
    }
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conv, {**conv, "uuid": "c2", "name": "Copy"}]))
    messages = read_all(chat_export.FORMAT, path)
    assert shown(messages) == ["question", "newbranch"] * 2
    assert [m.session_id for m in messages] == ["c1", "c1", "c2", "c2"]


def test_detection_per_file_and_override(tmp_path: Path) -> None:
    expected = {
        "claude-code/claude-code-log-edge_cases.jsonl": "claude_code",
        "codex/agent-sessions-large.jsonl": "codex",
        "gemini/agent-sessions-small.json": "gemini",
        "gemini/agent-sessions-jsonl_v040.jsonl": "gemini",
        "chatgpt-export/polylogue-golden-conversations.json": "chat_export",
        "claude-export/polylogue-golden-conversations.json": "chat_export",
    }
    for rel, fmt in expected.items():
        path = FIXTURES / rel
        assert detect(path, path.stat().st_ino, None) == fmt, rel
    meta = next((FIXTURES / "claude-code").rglob("*.meta.json"))
    assert detect(meta, meta.stat().st_ino, None) is None
    shutil.copytree(FIXTURES / "codex", tmp_path / "c")
    root = resolve_root(f"{tmp_path / 'c'}:codex")
    assert {d.format for d in scan(root)} == {"codex"} and set(FORMATS) >= {"dag", "codex"}


@pytest.fixture
def fixture_root(tmp_path: Path) -> Path:
    root = tmp_path / "fixtures"
    for sub in ("claude-code", "codex", "gemini", "chatgpt-export", "claude-export"):
        shutil.copytree(FIXTURES / sub, root / sub)
    return root


def test_end_to_end_effective_branch_only(fixture_root: Path, cli: CliRun) -> None:
    out = as_json(cli("index", "--root", str(fixture_root), "--json"))
    assert out["stats"]["indexed"] >= 40 and out["stats"]["failed"] == 0

    def hits(query: str, *extra: str) -> list[dict[str, Any]]:
        result = as_json(
            cli(
                "search",
                query,
                "--json",
                "--no-group",
                "--kind",
                "user_text,assistant_text",
                *extra,
            )
        )
        return list(result["hits"])

    assert [h["sourceFormat"] for h in hits("Kept going")][:1] == ["claude_code"]
    assert hits("First attempt") == []  # rewound Claude Code branch
    assert hits("Superseded") == []  # inactive ChatGPT answer
    found = hits("artifact")
    assert found and found[0]["sessionId"] == "chatgpt-fixture-conversation"
    assert hits("synthetic researcher")  # Codex parent thread
    # Sub-agent transcripts are searchable only on request.
    assert hits("TODO comments") == []
    assert hits("TODO comments", "--include-subagents")


def test_sources_command_lists_formats(fixture_root: Path, cli: CliRun) -> None:
    out = as_json(cli("sources", "--root", str(fixture_root), "--json", cache=False))
    (row,) = out["roots"]
    assert row["format"] == "auto" and row["subagents"] >= 3
    assert set(row["formats"]) == {"claude_code", "codex", "gemini", "chat_export"}


def test_every_format_has_a_resume_template_or_none() -> None:
    for name, fmt in FORMATS.items():
        template = fmt.resume
        if template is not None:
            fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
            assert fields <= {"id", "cwd"}, name
            # No session ids: Aider reloads the history in its directory; iFlow
            # documents only its session picker.
            if name in ("aider", "iflow"):
                assert "S-1" not in template.format(id="S-1", cwd="/w")
                continue
            assert "id" in fields, name
            assert "S-1" in template.format(id="S-1", cwd="/w")


def test_every_format_is_documented() -> None:
    docs = (FIXTURES.parents[1] / "docs" / "formats.md").read_text("utf-8")
    table = [line for line in docs.splitlines() if line.startswith("| ")]
    assert all(any(f"`{name}`" in row for row in table) for name in FORMATS), "docs/formats.md"


def test_the_registry_names_every_reader_by_its_own_name() -> None:
    """The lazily loaded table agrees with each module's own name."""
    import importlib

    from convodex.sources.registry import MODULES

    for name, module in MODULES.items():
        loaded = importlib.import_module(f"convodex.sources.{module}")
        table = getattr(loaded, "FORMATS", None) or {loaded.NAME: loaded.FORMAT}
        assert FORMATS[name] is table[name] and FORMATS[name].name == name


def test_hand_off_commands_take_the_brief() -> None:
    """``resume --in`` starts these agents with a first prompt, each its documented way."""
    with_handoff = {name: fmt.handoff for name, fmt in FORMATS.items() if fmt.handoff}
    assert {"claude_code", "codex", "gemini", "cursor", "opencode", "pi"} <= set(with_handoff)
    for name, template in with_handoff.items():
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
        assert fields <= {"prompt", "file", "cwd"} and fields & {"prompt", "file"}, name
