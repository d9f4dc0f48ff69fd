"""Claude Code: MCP servers in ``~/.claude.json`` (user) or ``.mcp.json`` (project);
hooks in ``~/.claude/settings.json`` or ``.claude/settings.json``. Both plain JSON.

Hook contract: ``UserPromptSubmit`` sends ``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name`` and ``prompt`` on stdin and reads
``hookSpecificOutput.additionalContext``; ``timeout`` is in seconds."""

from __future__ import annotations

from pathlib import Path

from convodex.agents.spec import Agent, Entry, Scope, Target, env_dir, hook_command, recall_marker

NAME = "claude-code"


def _config_dir(scope: Scope) -> Path:
    return env_dir("CLAUDE_CONFIG_DIR", scope.home / ".claude")


def present(scope: Scope) -> bool:
    return _config_dir(scope).is_dir() or (scope.home / ".claude.json").is_file()


def targets(scope: Scope, command: list[str]) -> list[Target]:
    if scope.project is not None:
        mcp_file, settings = (
            scope.project / ".mcp.json",
            scope.project / ".claude" / "settings.json",
        )
    else:
        folder = _config_dir(scope)
        in_dir = folder / ".claude.json"
        mcp_file = in_dir if in_dir.is_file() else scope.home / ".claude.json"
        settings = folder / "settings.json"
    server = {"type": "stdio", "command": command[0], "args": [*command[1:], "mcp"]}
    hook = {"hooks": [{"type": "command", "command": hook_command(command, NAME), "timeout": 5}]}
    return [
        Target(NAME, "mcp", mcp_file, "json", (Entry(("mcpServers", "convodex"), server),)),
        Target(
            NAME,
            "hook",
            settings,
            "json",
            (Entry(("hooks", "UserPromptSubmit"), hook, recall_marker(NAME)),),
        ),
    ]


AGENT = Agent(
    name=NAME,
    label="Claude Code",
    present=present,
    targets=targets,
    docs=(
        "https://code.claude.com/docs/en/hooks",
        "https://code.claude.com/docs/en/mcp",
        "https://code.claude.com/docs/en/settings",
    ),
)
