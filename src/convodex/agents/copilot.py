"""GitHub Copilot CLI: ``mcpServers`` in ``~/.copilot/mcp-config.json``, JSON.

No recall hook: its ``userPromptSubmitted`` hook's output is ignored (it observes the
prompt only). No ``--project``: the CLI reads MCP servers from ``~/.copilot``."""

from __future__ import annotations

import os
from pathlib import Path

from convodex.agents.spec import Agent, Entry, Scope, Target

NAME = "copilot"


def _config_dir(scope: Scope) -> Path:
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else scope.home) / ".copilot"


def present(scope: Scope) -> bool:
    return _config_dir(scope).is_dir()


def targets(scope: Scope, command: list[str]) -> list[Target]:
    server = {"type": "local", "command": command[0], "args": [*command[1:], "mcp"]}
    server["tools"] = ["*"]
    path = _config_dir(scope) / "mcp-config.json"
    return [Target(NAME, "mcp", path, "json", (Entry(("mcpServers", "convodex"), server),))]


AGENT = Agent(
    name=NAME,
    label="GitHub Copilot CLI",
    present=present,
    targets=targets,
    no_hook="Copilot CLI ignores the output of its userPromptSubmitted hook",
    no_project="Copilot CLI reads MCP servers from ~/.copilot/mcp-config.json only",
    docs=(
        "https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers",
        "https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference",
    ),
)
