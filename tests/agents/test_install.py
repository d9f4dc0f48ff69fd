"""``convodex install`` / ``uninstall`` on a fake HOME holding real-looking config files
of every agent (SPEC L18): exactly the entries added, everything else byte for byte,
idempotent, atomic, a backup kept, malformed files refused, ``--dry-run`` inert,
``uninstall`` back to the original bytes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agents.homes import HOOK_ENTRY, MCP_ENTRY, USER_FILES, fill
from convodex.agents import jsonc
from convodex.agents.spec import launcher
from helpers import CliRun, tree_hashes

ALL = list(MCP_ENTRY)


@pytest.fixture
def home() -> Path:
    return Path(os.environ["HOME"])


def load(path: Path) -> Any:
    text = path.read_text("utf-8")
    if path.suffix == ".toml":
        return tomllib.loads(text)
    return jsonc.load(text, comments=True)


def dig(data: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def run(cli: CliRun, *args: str) -> Any:
    result = cli(*args, "--json", cache=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_install_adds_exactly_the_entries_and_keeps_everything_else(
    cli: CliRun, home: Path
) -> None:
    originals = fill(home)
    report = run(cli, "install", *ALL)
    assert report["refused"] == [] and report["dryRun"] is False
    command = launcher()
    for agent, (relative, keys) in MCP_ENTRY.items():
        data = load(home / relative)
        server = dig(data, keys)
        assert server is not None, agent
        started = server["command"] if isinstance(server["command"], list) else None
        if started is None:
            assert [server["command"], *server["args"]] == [*command, "mcp"]
        else:
            assert started == [*command, "mcp"]
        # The other servers and the unrelated settings are all still there.
        before = load_text(relative, originals[relative])
        for key, value in flatten(before):
            assert dig(data, key) == value, (agent, key)
    for agent, (relative, keys) in HOOK_ENTRY.items():
        groups = dig(load(home / relative), keys)
        commands = [hook["command"] for group in groups for hook in group["hooks"]]
        assert commands == [shlex.join([*command, "recall", "--agent", agent])], agent
    # Comments survive: every original line is still in the file, in order.
    for relative, raw in originals.items():
        now = (home / relative).read_text("utf-8").splitlines()
        assert is_subsequence(raw.decode().splitlines(), now), relative


def load_text(relative: str, raw: bytes) -> Any:
    text = raw.decode("utf-8")
    return tomllib.loads(text) if relative.endswith(".toml") else jsonc.load(text, True)


def flatten(data: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(data, dict) and data:
        return [item for key, value in data.items() for item in flatten(value, (*prefix, key))]
    return [(prefix, data)]


def is_subsequence(needles: list[str], haystack: list[str]) -> bool:
    """Whether ``needles`` appear in ``haystack`` in order; a last original member may
    have gained the comma before convodex's entry."""
    position = 0
    for needle in needles:
        while position < len(haystack) and haystack[position] not in (needle, needle + ","):
            position += 1
        if position == len(haystack):
            return False
        position += 1
    return True


def test_a_second_install_changes_no_byte_and_uninstall_restores_the_originals(
    cli: CliRun, home: Path
) -> None:
    originals = fill(home)
    run(cli, "install", *ALL)
    installed = tree_hashes(home)
    mtimes = {p: os.stat(p).st_mtime_ns for p in installed}
    again = run(cli, "install", *ALL)
    assert {c["action"] for c in again["changes"]} == {"unchanged"}
    assert tree_hashes(home) == installed
    assert {p: os.stat(p).st_mtime_ns for p in installed} == mtimes  # not even rewritten
    # A backup of each original is kept.
    backups = {c["path"]: c.get("backup") for c in run(cli, "install", *ALL)["changes"]}
    assert all(b is None for b in backups.values())  # unchanged runs name none
    out = run(cli, "uninstall", *ALL)
    assert {c["action"] for c in out["changes"]} == {"restore"}
    for relative, raw in originals.items():
        assert (home / relative).read_bytes() == raw, relative
    assert run(cli, "uninstall", *ALL)["changes"] == [
        {**c, "action": "unchanged", "entries": []} for c in unchanged(out["changes"])
    ]


def unchanged(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in c.items() if k != "backup"} for c in changes]


def test_backups_hold_the_original_bytes(cli: CliRun, home: Path) -> None:
    originals = fill(home)
    report = run(cli, "install", *ALL)
    for change in report["changes"]:
        relative = str(Path(change["path"]).relative_to(home))
        assert Path(change["backup"]).read_bytes() == originals[relative]
        assert (Path(change["backup"]).stat().st_mode & 0o777) == 0o600


def test_files_that_did_not_exist_are_created_and_removed_again(cli: CliRun, home: Path) -> None:
    (home / ".claude").mkdir(parents=True)
    report = run(cli, "install", "claude-code")
    assert [c["action"] for c in report["changes"]] == ["create", "create"]
    settings = json.loads((home / ".claude" / "settings.json").read_text("utf-8"))
    assert list(settings) == ["hooks"]
    run(cli, "uninstall", "claude-code")
    assert not (home / ".claude.json").exists()
    assert not (home / ".claude" / "settings.json").exists()


def test_dry_run_prints_the_change_and_writes_nothing(cli: CliRun, home: Path) -> None:
    fill(home)
    before = tree_hashes(home)
    result = cli("install", "--dry-run", *ALL, cache=False)
    assert result.exit_code == 0, result.output
    assert tree_hashes(home) == before
    assert "+++ " in result.stdout and '+    "convodex": {' in result.stdout
    assert "+[mcp_servers.convodex]" in result.stdout
    assert not (Path(os.environ["CONVODEX_HOME"]) / "install").exists()
    run(cli, "install", *ALL)
    installed = tree_hashes(home)
    result = cli("uninstall", "--dry-run", *ALL, cache=False)
    assert result.exit_code == 0 and tree_hashes(home) == installed
    assert '-    "convodex": {' in result.stdout


@pytest.mark.parametrize(
    ("relative", "broken"),
    [
        (".claude/settings.json", '{"model": "opus",\n  "hooks": {\n}\n'),
        (".codex/config.toml", 'model = "gpt-5"\n[mcp_servers\n'),
        (".gemini/settings.json", '{"ui": {"theme": "GitHub"} /* unclosed\n'),
        (".cursor/mcp.json", '["not", "an", "object"]\n'),
        (".claude/settings.json", '{"hooks": {"UserPromptSubmit": "not a list"}}\n'),
    ],
)
def test_a_malformed_file_is_refused_in_one_line_and_left_untouched(
    cli: CliRun, home: Path, relative: str, broken: str
) -> None:
    fill(home)
    (home / relative).write_text(broken, "utf-8")
    before = tree_hashes(home)
    result = cli("install", *ALL, cache=False)
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(home / relative) in errors[0]
    assert "left untouched" in errors[0] and "Traceback" not in result.stderr
    assert (home / relative).read_text("utf-8") == broken
    # Only the refused agent is left alone; the others are wired.
    refused = next(a for a, (rel, _) in {**MCP_ENTRY, **HOOK_ENTRY}.items() if rel == relative)
    changed = {p for p, digest in tree_hashes(home).items() if before.get(p) != digest}
    assert changed and not any(refused_file(refused, home) == Path(p) for p in changed)


def refused_file(agent: str, home: Path) -> Path:
    return home / MCP_ENTRY[agent][0]


def test_uninstall_after_the_user_edited_the_file_keeps_their_edit(cli: CliRun, home: Path) -> None:
    fill(home)
    run(cli, "install", "gemini", "codex")
    settings = home / ".gemini" / "settings.json"
    edited = settings.read_text("utf-8").replace('"vimMode": true', '"vimMode": false')
    settings.write_text(edited, "utf-8")
    codex = home / ".codex" / "config.toml"
    codex.write_text(codex.read_text("utf-8") + '\n[mcp_servers.mine]\ncommand = "x"\n', "utf-8")
    out = run(cli, "uninstall", "gemini", "codex")
    assert {c["action"] for c in out["changes"]} == {"remove"}
    data = load(settings)
    assert data["general"] == {"vimMode": False}
    assert "convodex" not in data["mcpServers"] and "hooks" not in data
    assert "// Gemini CLI user settings" in settings.read_text("utf-8")
    servers = load(codex)["mcp_servers"]
    assert set(servers) == {"docs", "mine"}


def test_project_scope_writes_the_projects_own_files(
    cli: CliRun, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    monkeypatch.chdir(project)
    report = run(cli, "install", "--project", "claude-code", "codex", "cursor", "copilot")
    paths = sorted(Path(c["path"]).relative_to(project).as_posix() for c in report["changes"])
    assert paths == [".claude/settings.json", ".codex/config.toml", ".cursor/mcp.json", ".mcp.json"]
    assert report["skipped"] and "copilot" in report["skipped"][0]
    assert not any(home.rglob("*.json"))
    run(cli, "uninstall", "--project", "claude-code", "codex", "cursor")
    assert not any(p.is_file() for p in project.rglob("*"))


def test_an_unknown_agent_is_a_usage_error(cli: CliRun, home: Path) -> None:
    result = cli("install", "claud-code", cache=False)
    assert result.exit_code == 2 and "did you mean claude-code?" in result.output


def test_install_with_no_agent_wires_the_agents_found_here(cli: CliRun, home: Path) -> None:
    (home / ".gemini").mkdir(parents=True)
    (home / ".cursor").mkdir(parents=True)
    report = run(cli, "install")
    assert sorted({c["agent"] for c in report["changes"]}) == ["cursor", "gemini"]
    assert sorted({c["agent"] for c in run(cli, "uninstall")["changes"]}) == ["cursor", "gemini"]


def test_the_installed_hook_command_runs_as_the_agent_runs_it(
    cli: CliRun, home: Path, tmp_path: Path
) -> None:
    """The command Claude Code will run, exactly as written into settings.json."""
    fill(home)
    run(cli, "install", "claude-code")
    groups = json.loads((home / ".claude" / "settings.json").read_text("utf-8"))["hooks"]
    command = groups["UserPromptSubmit"][0]["hooks"][0]["command"]
    event = {
        "session_id": "s1",
        "transcript_path": str(tmp_path / "s1.jsonl"),
        "cwd": str(tmp_path),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "where did we leave the flaky checkout test",
    }
    done = subprocess.run(
        command,
        shell=True,
        input=json.dumps(event).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")  # no catalog yet
    receipts = Path(os.environ["CONVODEX_HOME"]) / "recall" / "receipts.jsonl"
    assert json.loads(receipts.read_text("utf-8"))["sessionId"] == "s1"


def test_user_files_are_what_the_fixture_says() -> None:
    """The fake HOME itself parses as each agent would read it (a broken fixture would
    make the other tests prove nothing)."""
    for relative, text in USER_FILES.items():
        assert load_text(relative, text.encode()) is not None


def test_doctor_reports_each_agent(cli: CliRun, home: Path) -> None:
    fill(home)
    before = cli("doctor", "agents", "--json", cache=False)
    assert before.exit_code == 0, before.output
    agents = {a["agent"]: a for a in json.loads(before.stdout)["agents"]}
    assert set(agents) == set(ALL)
    assert all(a["installed"] and not a["mcp"] for a in agents.values())
    assert agents["claude-code"]["hook"] is False and agents["codex"]["hook"] is None
    assert any("experimental" in why for why in agents["codex"]["why"])
    run(cli, "install", "claude-code", "codex", "cursor")
    after = json.loads(cli("doctor", "agents", "--json", cache=False).stdout)["agents"]
    wired = {a["agent"]: (a["mcp"], a["hook"]) for a in after}
    assert wired["claude-code"] == (True, True) and wired["codex"] == (True, None)
    assert wired["cursor"] == (True, None) and wired["gemini"] == (False, False)
    (home / ".gemini" / "settings.json").write_text("{ not json", "utf-8")
    text = cli("doctor", "agents", cache=False)
    assert text.exit_code == 0 and "does not parse" in text.stdout


def test_a_linked_config_file_stays_a_link(cli: CliRun, home: Path, tmp_path: Path) -> None:
    """Dotfiles kept in a repository: the link is kept, the file it points at edited."""
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    original = USER_FILES[".claude/settings.json"]
    dotfiles.write_text(original, "utf-8")
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").symlink_to(dotfiles)
    run(cli, "install", "claude-code")
    assert (home / ".claude" / "settings.json").is_symlink()
    assert "recall --agent claude-code" in dotfiles.read_text("utf-8")
    run(cli, "uninstall", "claude-code")
    assert (home / ".claude" / "settings.json").is_symlink()
    assert dotfiles.read_text("utf-8") == original


def test_windows_line_ends_are_kept(cli: CliRun, home: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    original = USER_FILES[".cursor/mcp.json"].replace("\n", "\r\n").encode()
    path.write_bytes(original)
    run(cli, "install", "cursor")
    data = path.read_bytes()
    assert b'"convodex"' in data and data.count(b"\n") == data.count(b"\r\n")
    path.write_bytes(data + b"\r\n")  # edited since: uninstall takes out only its entry
    run(cli, "uninstall", "cursor")
    assert path.read_bytes() == original + b"\r\n"


def test_a_file_the_agent_rewrites_meanwhile_is_not_replaced(home: Path) -> None:
    """Between planning and writing, the agent saved its own change: convodex refuses
    rather than overwrite it."""
    from convodex.agents import engine
    from convodex.agents.jsonc import EditError
    from convodex.agents.registry import AGENTS
    from convodex.agents.spec import Scope

    fill(home)
    [(path, targets)] = engine.by_file(
        AGENTS["cursor"].targets(Scope(home=home), launcher())
    ).items()
    change = engine.plan_install("cursor", path, targets)
    path.write_text('{"mcpServers": {}, "theirs": true}\n', "utf-8")
    with pytest.raises(EditError, match="changed while convodex was editing it"):
        engine.apply_install(change)
    assert json.loads(path.read_text("utf-8")) == {"mcpServers": {}, "theirs": True}
