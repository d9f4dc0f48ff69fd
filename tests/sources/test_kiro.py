"""Kiro: the CLI's session logs (~/.kiro/sessions/cli, with their companion JSON) and
the IDE's workspace sessions, found under their default roots and by content under any
root; results named after their call, sub-agent sessions apart."""

from __future__ import annotations

from pathlib import Path

from convodex.sources.registry import FORMATS
from helpers import FIXTURES, CliRun, as_json, hits, read_all
from sources.agents import Agent, Placed, check_any_root, check_default_root

KIRO = FIXTURES / "kiro"
SESSION = "e36d6e16-bf0a-4982-91e1-68e63be0fa60"
RECORDING = KIRO / "irrlicht" / "2-2_auto-executed-tool-call"
IDE_SESSION = (
    KIRO / "cli-continues" / "workspace-sessions" / "test-workspace" / "test-session-1.json"
)

CLI = Agent(
    name="kiro",
    root=".kiro/sessions/cli",
    placed=[
        Placed(RECORDING / "transcript.jsonl", f"{SESSION}.jsonl"),
        Placed(RECORDING / "transcript.json", f"{SESSION}.json"),
    ],
    said=[
        ("user_text", "shell"),
        ("assistant_text", "done"),
        ("tool_input", "echo"),
        ("tool_output", "hello"),
    ],
    resume=f"kiro-cli chat --resume-id {SESSION}",
    session=SESSION,
    # Kiro created this session for a sub-agent (`session_created_reason`).
    subagent_word="echo",
)

IDE = Agent(
    name="kiro_ide",
    root=".config/Kiro/User/globalStorage/kiro.kiroagent",
    placed=[Placed(IDE_SESSION, "workspace-sessions/L1VzZXJzL2Rldi9teS1hcHA/test-session-1.json")],
    said=[("user_text", "toggle"), ("assistant_text", "localStorage")],
    resume=None,
    session="test-session-1",
)


def test_cli_found_under_the_default_root(cli: CliRun) -> None:
    check_default_root(CLI, cli)


def test_cli_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(CLI, tmp_path, cli)


def test_ide_found_under_the_default_root(cli: CliRun) -> None:
    check_default_root(IDE, cli)


def test_ide_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(IDE, tmp_path, cli)
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "kiro-session.json").write_bytes(IDE_SESSION.read_bytes())  # no layout at all
    out = as_json(cli("index", "--root", str(flat), "--json"))
    assert out["stats"]["indexed"] == 1


def test_cli_messages_with_tools_and_the_companion_facts() -> None:
    messages = read_all(FORMATS["kiro"], RECORDING / "transcript.jsonl")
    said = [(m.role, [(d.kind, d.tool_name) for d in m.documents]) for m in messages]
    assert said == [
        ("user", [("user_text", None)]),
        ("assistant", [("tool_input", "shell")]),
        ("tool", [("tool_output", "shell")]),  # named through its call's id
        ("assistant", [("assistant_text", None)]),
    ]
    assert messages[0].created_at == 1787363522000  # meta.timestamp, seconds
    assert "__tool_use_purpose" not in messages[1].text()  # Kiro's own, not an argument
    assert messages[2].text().endswith("hello\n")
    info = FORMATS["kiro"].info(RECORDING / "transcript.jsonl")
    assert (info.session_id, info.subagent, info.created_at) == (SESSION, True, 1787363522394)
    assert info.title is not None and info.title.startswith("Run the shell command")


def test_ide_session_facts() -> None:
    info = FORMATS["kiro_ide"].info(IDE_SESSION)
    assert (info.session_id, info.title, info.workspace_root) == (
        "test-session-1",
        "Add dark mode toggle",
        "/Users/dev/my-app",
    )
    roles = [m.role for m in read_all(FORMATS["kiro_ide"], IDE_SESSION)]
    assert roles == ["user", "assistant", "user", "assistant"]


def test_a_malformed_line_is_counted_and_the_rest_read(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "cli"
    root.mkdir()
    lines = (RECORDING / "transcript.jsonl").read_bytes().splitlines(keepends=True)
    (root / f"{SESSION}.jsonl").write_bytes(
        b"".join([lines[0], b'{"version": "v1", \n', *lines[1:]])
    )
    out = as_json(cli("index", "--root", f"{root}:kiro", "--json"))
    assert out["stats"]["lineErrors"] == 1
    assert hits(cli, "hello", "--include-subagents")
