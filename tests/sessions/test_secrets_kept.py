"""Secrets kept (SPEC X11): what reaches another program or leaves the machine is
redacted by default, without stray characters, and carries no home or user name.

Through the real CLI and a real exec of stub agents: ``resume --in`` hands over a
redacted brief, kept in a private file, and puts neither the brief nor its secrets
on the agent's command line (``ps`` shows argv); ``--no-redact`` opts out; a
redacted export replaces the home directory and the user name in paths.
"""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Any

from helpers import CliRun, as_json, write_claude_session
from stub_agents import run_convodex, stub_agents

TOKEN = "ghp_" + "Zx81" * 9
T0 = 1_767_225_600_000


def secret_session(tmp_path: Path, cli: CliRun) -> tuple[str, Path]:
    home = Path.home()  # the test's HOME (tmp_path/user-home)
    workspace = home / "shop"
    workspace.mkdir(parents=True)
    root = tmp_path / "claude"
    turns = [
        ("user", f"deploy with GITHUB_TOKEN={TOKEN} please", T0),
        ("assistant", f"Reading {workspace}/.env and deploying.", T0 + 1000),
    ]
    write_claude_session(root, "5ec2e700-1111-4222-8333-444455556666", str(workspace), turns)
    as_json(cli("index", "--root", f"{root}:claude-code", "--json"))
    return "5ec2e700-1111-4222-8333-444455556666", workspace


run = run_convodex


def test_resume_in_hands_over_a_redacted_brief_off_the_command_line(
    cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    session_id, workspace = secret_session(tmp_path, cli)
    env, record = stub_agents(tmp_path, "codex")
    done = run(env, cache_dir, "resume", session_id, "--in", "codex")
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(record.read_text("utf-8"))
    assert seen["cwd"] == str(workspace)
    kept = cache_dir / "handoffs" / f"{session_id}.md"
    brief = kept.read_text("utf-8")
    assert TOKEN not in brief and "GITHUB_TOKEN=[redacted] please" in brief
    assert kept.stat().st_mode & 0o777 == 0o600
    argv = " ".join(seen["argv"])
    assert "deploy with" not in argv and "GITHUB_TOKEN" not in argv  # not the brief
    assert str(kept) in argv  # the agent is told where to read it

    printed = run(env, cache_dir, "resume", session_id, "--in", "codex", "--print")
    assert printed.returncode == 0, printed.stderr
    assert TOKEN not in printed.stdout and "$(cat" not in printed.stdout

    record.unlink()
    raw = run(env, cache_dir, "resume", session_id, "--in", "codex", "--no-redact")
    assert raw.returncode == 0, raw.stderr
    assert TOKEN in kept.read_text("utf-8")


def test_a_redacted_export_names_no_home_and_no_user(
    cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    session_id, _ = secret_session(tmp_path, cli)
    home = str(Path.home())
    for fmt in ("markdown", "json", "html"):
        out = cli("export", session_id, "--format", fmt, "--redact")
        assert out.exit_code == 0, out.output
        assert TOKEN not in out.stdout and "[redacted]]" not in out.stdout
        assert home not in out.stdout, fmt
        assert "~/shop" in out.stdout, fmt
    document = json.loads(cli("export", session_id, "--format", "json", "--redact").stdout)
    assert document["project"] == "~/shop"
    assert document["sessionPath"].startswith("~/") or home not in document["sessionPath"]
    # Without --redact an export is the user's own copy: paths as they are.
    plain = json.loads(cli("export", session_id, "--format", "json").stdout)
    assert plain["project"] == f"{home}/shop" and getpass.getuser()
