"""Google Antigravity: step logs under ~/.gemini/antigravity-cli/brain (and, by their
numbered steps, under any root); prompts without Antigravity's own blocks, calls with
decoded arguments, the result steps after them, thinking and injected steps left out."""

from __future__ import annotations

import shutil
from pathlib import Path

from convodex.sources.registry import FORMATS
from helpers import FIXTURES, CliRun, as_json, hits, read_all
from sources.agents import Agent, Placed, check_any_root, check_default_root

AG = FIXTURES / "antigravity"
SMALL = AG / "agent-sessions-cli_small.jsonl"
REAL = AG / "irrlicht" / "3-1_foreground-subagent" / "transcript.jsonl"
CONVERSATION = "5b0c2f4e-1d2a-4c6b-9e0f-2a3b4c5d6e7f"
LOG = ".system_generated/logs/transcript.jsonl"

AGENT = Agent(
    name="antigravity",
    root=".gemini/antigravity-cli/brain",
    placed=[
        Placed(SMALL, f"{CONVERSATION}/{LOG}"),
        Placed(REAL, f"c34d023c-0000-4000-8000-000000000001/{LOG}"),
        Placed(AG / "codeburn" / "brain" / "fixture-current-cli", "fixture-current-cli"),
    ],
    said=[
        ("user_text", "note.txt"),
        ("assistant_text", "contains"),
        ("tool_input", "TargetFile"),
        ("tool_output", "hello"),
        ("tool_error", "empty"),
    ],
    resume=f"agy --conversation {CONVERSATION}",
    session=CONVERSATION,
)


def test_found_under_the_default_root(cli: CliRun) -> None:
    check_default_root(AGENT, cli)


def test_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(AGENT, tmp_path, cli)


def test_steps_as_messages_in_file_order() -> None:
    messages = read_all(FORMATS["antigravity"], SMALL)
    said = [(m.role, [(d.kind, d.tool_name) for d in m.documents]) for m in messages[:4]]
    assert said == [
        ("user", [("user_text", None)]),
        ("assistant", [("tool_input", "list_dir")]),
        (
            "tool",
            [
                ("tool_output", "list_directory"),
                ("tool_output", "view_file"),
                ("tool_output", "run_command"),
            ],
        ),
        ("assistant", [("assistant_text", None)]),
    ]
    assert messages[0].text() == "List the files."  # not the settings change
    assert messages[0].created_at == 1782508576000
    assert '"DirectoryPath":"/tmp/repo"' in messages[1].text()  # the JSON-encoded value, decoded
    everything = "\n".join(m.text() for m in messages)
    assert "Listing the directory." not in everything  # thinking
    assert "Resuming from a compaction" not in everything  # a checkpoint
    assert "SYSTEM_MESSAGE" not in everything


def test_a_model_error_is_a_tool_error_and_the_conversation_its_folder() -> None:
    messages = read_all(FORMATS["antigravity"], REAL)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "tool"]
    assert messages[0].text().endswith("reply with exactly: done")  # no metadata blocks
    assert [d.kind for d in messages[3].documents] == ["tool_error"]
    log = AG / "codeburn" / "brain" / "fixture-current-cli" / LOG
    assert FORMATS["antigravity"].info(log).session_id == "fixture-current-cli"


def test_a_malformed_line_is_counted_and_the_rest_read(tmp_path: Path, cli: CliRun) -> None:
    log = tmp_path / "brain" / CONVERSATION / LOG
    log.parent.mkdir(parents=True)
    lines = SMALL.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([lines[0], b'{"step_index": 1, "type": \n', *lines[1:]]))
    out = as_json(cli("index", "--root", str(tmp_path / "brain"), "--json"))
    assert out["stats"]["lineErrors"] == 1
    assert hits(cli, "contains", "--kind", "assistant_text")


def test_a_sub_agent_conversation_is_kept_apart(tmp_path: Path, cli: CliRun) -> None:
    """The conversation a parent's ``INVOKE_SUBAGENT`` step created (the real recording
    names ``d635cb50…``) is a sub-agent of that parent: out of default results, found
    with ``--include-subagents``; the parent stays a main session."""
    parent, child = "c34d023c-0000-4000-8000-000000000001", "d635cb50-37ab-439f-8d61-111b084a0434"
    brain = tmp_path / "brain"
    for conversation, sample in ((parent, REAL), (child, SMALL)):
        (brain / conversation / LOG).parent.mkdir(parents=True)
        shutil.copy(sample, brain / conversation / LOG)
    info = FORMATS["antigravity"].info(brain / child / LOG)
    assert (info.session_id, info.parent_id, info.subagent) == (child, parent, True)
    assert FORMATS["antigravity"].info(brain / parent / LOG).subagent is False
    out = as_json(cli("index", "--root", f"{brain}:antigravity", "--json"))
    assert out["stats"]["failed"] == 0
    assert hits(cli, "List the files") == []
    (found,) = hits(cli, "List the files", "--include-subagents")
    assert found["sessionId"] == child
    assert {h["sessionId"] for h in hits(cli, "exactly")} == {parent}
