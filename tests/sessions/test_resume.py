"""``convodex resume`` (SPEC L15): each agent's documented command, in the session's
workspace; overrides from the config file; a real exec of a stub agent; ``--in``."""

from __future__ import annotations

import getpass
import json
import os
from pathlib import Path
from typing import Any

import pytest

from convodex.text.agents import agent_key
from convodex.text.redact import redact_paths
from helpers import FIXTURES, CliRun, as_json, hits, write_claude_session
from stub_agents import run_convodex, stub_agents

# The agents' own documented resume commands (tests/fixtures/README.md, "Formats and
# resume commands"), for a fixture session of each: (ref, the command --print shows).
DOCUMENTED = {
    "claude_code": (
        "55550000-0000-4000-8000-000000000001",
        "cd /workspace/example-app && claude --resume 55550000-0000-4000-8000-000000000001",
    ),
    "codex": (
        "11111111-1111-4111-8111-111111111111",
        "cd /workspace/synthetic-project && codex resume 11111111-1111-4111-8111-111111111111",
    ),
    "gemini": (
        "session-2025-12-16T23-47-b4f17607",  # Gemini chats do not record a workspace
        "gemini --resume session-2025-12-16T23-47-b4f17607",
    ),
    "qwen": (
        "019f0000-0000-7000-8000-000000000001",
        "cd /tmp/as-qwen-fixture/project && qwen --resume 019f0000-0000-7000-8000-000000000001",
    ),
    "copilot_cli": (
        "aaaabbbb-1111-2222-3333-ccccddddeeee",
        "cd /tmp/project && copilot --resume=aaaabbbb-1111-2222-3333-ccccddddeeee",
    ),
    "droid": ("droid_large", "cd /tmp/large && droid --resume droid_large"),
    "pi": (
        "019e19b4-eb48-746a-aa6b-8dfcfa37954b",
        "cd /tmp/as-agent-fixture/project && pi --session 019e19b4-eb48-746a-aa6b-8dfcfa37954b",
    ),
}
# Agents that document no way to resume from a shell (IDE extensions, exports).
NO_COMMAND = {
    "copilot-vscode": "test-session-001",
    "cline": "1784094124598_rruoq",
    "roo-code": "0195f0e2-7c1d-7a6b-9e33-3c5d6e7f8a9b",
    "chat-export": "chatgpt-fixture-conversation",
}
T0 = 1_767_225_600_000


@pytest.fixture
def fixtures_indexed(cli: CliRun) -> None:
    as_json(cli("index", "--root", str(FIXTURES), "--json"))


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "user-home" / ".config" / "convodex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def test_print_gives_each_agents_documented_command(
    fixtures_indexed: None, cli: CliRun, tmp_path: Path
) -> None:
    for agent, (ref, command) in DOCUMENTED.items():
        result = cli("resume", ref, "--print")
        assert result.exit_code == 0, result.output
        assert result.stdout == command + "\n", agent
        # The id#N of a hit resumes its session just the same.
        assert cli("resume", f"{ref}#0", "--print").stdout == command + "\n"
    described = as_json(cli("resume", DOCUMENTED["gemini"][0], "--json"))
    assert described["argv"] == ["gemini", "--resume", DOCUMENTED["gemini"][0]]
    assert described["directory"] == os.getcwd()  # no workspace recorded: here
    for agent, ref in NO_COMMAND.items():
        result = cli("resume", ref, "--print")
        assert result.exit_code == 1
        assert f"error: {agent} has no resume command from a shell" in result.stderr
        assert "[resume] table" in result.stderr


def test_hits_carry_the_resume_command(fixtures_indexed: None, cli: CliRun) -> None:
    found = {agent_key(h["agent"]): h["resumeCommand"] for h in hits(cli, "repository")}
    assert found["claude_code"] == DOCUMENTED["claude_code"][1]
    vscode = hits(cli, "the", "--agent", "copilot-vscode")
    assert vscode and all(h["resumeCommand"] is None for h in vscode)


def test_the_config_file_overrides_and_bad_files_are_one_line(
    fixtures_indexed: None, cli: CliRun, tmp_path: Path
) -> None:
    claude_ref = DOCUMENTED["claude_code"][0]
    path = config_file(
        tmp_path,
        '[resume]\nclaude-code = "claude --resume {id} --fork-session"\n'
        'copilot_vscode = "code --reuse-window {cwd}"\n',
    )
    assert cli("resume", claude_ref, "--print").stdout == (
        f"cd /workspace/example-app && claude --resume {claude_ref} --fork-session\n"
    )
    vscode = as_json(cli("resume", NO_COMMAND["copilot-vscode"], "--json"))
    assert vscode["argv"] == ["code", "--reuse-window", "."]
    # Hits offer the same command.
    found = {agent_key(h["agent"]): h["resumeCommand"] for h in hits(cli, "repository")}
    assert found["claude_code"].endswith("--fork-session")

    for text, message in [
        ("[resume\n", "not valid TOML"),
        ('resume = "claude"\n', "resume must be a table"),
        ('[resumes]\nclaude = "x"\n', "unknown setting 'resumes'"),
        ('[resume]\nnobody = "x {id}"\n', "[resume] names an unknown agent 'nobody'"),
        ('[resume]\nclaude-code = "claude --resume {session}"\n', "may use only {id}, {cwd}"),
        ('[resume]\nclaude-code = ""\n', "must be a non-empty string"),
    ]:
        path.write_text(text, "utf-8")
        result = cli("resume", claude_ref, "--print")
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 1 and len(lines) == 1, text
        assert lines[0].startswith(f"error: {path}") or message in lines[0]
        assert message in lines[0], (text, lines[0])
        # Search keeps working on a broken file, with the agents' own commands.
        found = {agent_key(h["agent"]): h["resumeCommand"] for h in hits(cli, "repository")}
        assert found["claude_code"] in (DOCUMENTED["claude_code"][1], None)


def test_a_config_file_with_roots_still_gives_its_templates(
    fixtures_indexed: None, cli: CliRun, tmp_path: Path
) -> None:
    # One file, one loader: the roots setting is not an unknown key to the templates.
    claude_ref = DOCUMENTED["claude_code"][0]
    extra = tmp_path / "more-history"
    extra.mkdir()
    config_file(
        tmp_path,
        f'roots = ["{extra}"]\n\n[resume]\nclaude-code = "claude --resume {{id}} --fork-session"\n',
    )
    result = cli("resume", claude_ref, "--print")
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("--fork-session\n")
    found = {agent_key(h["agent"]): h["resumeCommand"] for h in hits(cli, "repository")}
    assert found["claude_code"].endswith("--fork-session")
    listed = as_json(cli("sources", "--json", cache=False))
    assert str(extra.resolve()) in [r["path"] for r in listed["roots"]]


def test_refs_ambiguous_and_unknown(fixtures_indexed: None, cli: CliRun) -> None:
    result = cli("resume", "555500", "--print")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ref '555500' is ambiguous: it matches 3 sessions: ")
    assert "55550000-0000-4000-8000-000000000002" in result.stderr
    unknown = cli("resume", "no-such-session", "--print")
    assert unknown.exit_code == 1 and "error: no session 'no-such-session'" in unknown.stderr
    short = cli("resume", "5555", "--print")
    assert "a prefix needs at least 6 characters" in short.stderr


run = run_convodex


def workspace_session(tmp_path: Path, cli: CliRun) -> tuple[str, Path]:
    workspace = tmp_path / "work space"  # a space: the path stays one argument
    workspace.mkdir()
    root = tmp_path / "claude"
    turns = [
        ("user", "migrate the orders table to the new schema", T0),
        ("assistant", "Starting with the migration script.", T0 + 1000),
        ("user", "and keep the old column until the backfill finishes", T0 + 2000),
        ("assistant", "Done: the column stays, the backfill runs nightly.", T0 + 3000),
    ]
    write_claude_session(root, "c0ffee00-1111-4222-8333-444455556666", str(workspace), turns)
    as_json(cli("index", "--root", f"{root}:claude-code", "--json"))
    return "c0ffee00-1111-4222-8333-444455556666", workspace


def test_resume_execs_the_agent_in_the_workspace(
    cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    session_id, workspace = workspace_session(tmp_path, cli)
    env, record = stub_agents(tmp_path, "claude", "codex")
    done = run(env, cache_dir, "resume", session_id[:8])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    seen: dict[str, Any] = json.loads(record.read_text("utf-8"))
    assert seen == {"argv": ["--resume", session_id], "cwd": str(workspace)}

    # --in: another agent, same directory, pointed at the brief's file (an agent that
    # reads files gets it by its file, never on its command line).
    record.unlink()
    done = run(env, cache_dir, "resume", f"{session_id}#2", "--in", "codex")
    assert done.returncode == 0, done.stderr
    seen = json.loads(record.read_text("utf-8"))
    assert seen["cwd"] == str(workspace) and len(seen["argv"]) == 1
    kept = cache_dir / "handoffs" / f"{session_id}.md"
    assert seen["argv"][0].startswith(f"Read the hand-off brief in {kept} ")
    brief = kept.read_text("utf-8")
    assert brief.startswith("# Continuing: migrate the orders table to the new schema")
    assert "## Goal (the first request)" in brief and "backfill runs nightly" in brief
    # Redacted by default: no home directory and no user name in its paths.
    shown = redact_paths(str(workspace), str(Path.home()), getpass.getuser())
    assert f"- Workspace: `{shown}`" in brief
    assert kept.stat().st_mode & 0o777 == 0o600

    printed = run(env, cache_dir, "resume", session_id, "--in", "gemini", "--print")
    assert printed.returncode == 0, printed.stderr
    command, where = printed.stdout.splitlines()
    assert command == (f"cd '{workspace}' && gemini --prompt-interactive \"$(cat {kept})\"")
    assert where == f"brief: {kept}"


def test_missing_executables_and_agents_are_clear_errors(
    cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    session_id, _ = workspace_session(tmp_path, cli)
    env = dict(os.environ, PATH=str(tmp_path / "empty-bin"))
    done = run(env, cache_dir, "resume", session_id)
    assert done.returncode == 1
    assert done.stderr == (
        "error: claude (the claude-code command) is not installed or not on PATH\n"
    )
    nobody = cli("resume", session_id, "--in", "notepad", "--print")
    assert nobody.exit_code == 1
    assert "cannot hand a session to 'notepad'" in nobody.stderr and "claude-code" in nobody.stderr
