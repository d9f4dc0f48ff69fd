"""Cline (its CLI; the VS Code extension edits the same shape through its MCP panel):
``mcpServers`` in ``~/.cline/data/settings/cline_mcp_settings.json``
(``CLINE_MCP_SETTINGS_PATH`` overrides), JSON.

No recall hook: Cline's hooks are executable scripts in a hooks folder, not commands
in a settings file; the MCP tools serve it. No ``--project``: one global file."""

from __future__ import annotations

from pathlib import Path

from convodex.agents.spec import Agent, Entry, Scope, Target, env_dir

NAME = "cline"


def _settings(scope: Scope) -> Path:
    default = scope.home / ".cline" / "data" / "settings" / "cline_mcp_settings.json"
    return env_dir("CLINE_MCP_SETTINGS_PATH", default)


def present(scope: Scope) -> bool:
    return (scope.home / ".cline").is_dir()


def targets(scope: Scope, command: list[str]) -> list[Target]:
    server = {
        "command": command[0],
        "args": [*command[1:], "mcp"],
        "disabled": False,
        "autoApprove": [],
    }
    path = _settings(scope)
    return [Target(NAME, "mcp", path, "json", (Entry(("mcpServers", "convodex"), server),))]


AGENT = Agent(
    name=NAME,
    label="Cline",
    present=present,
    targets=targets,
    no_hook="Cline's hooks are executable scripts in a folder, not settings entries",
    no_project="Cline keeps MCP servers in one global settings file",
    docs=("https://docs.cline.bot/mcp/configuring-mcp-servers",),
)
