"""Cursor: ``mcpServers`` in ``~/.cursor/mcp.json`` (user) or ``.cursor/mcp.json``
(project), JSON.

No recall hook: Cursor's ``beforeSubmitPrompt`` hook can allow or block a prompt but
not add context to it, and ``sessionStart`` runs before there is a prompt to recall
for."""

from __future__ import annotations

from convodex.agents.spec import Agent, Entry, Scope, Target

NAME = "cursor"


def present(scope: Scope) -> bool:
    return (scope.home / ".cursor").is_dir()


def targets(scope: Scope, command: list[str]) -> list[Target]:
    base = scope.project if scope.project is not None else scope.home
    server = {"command": command[0], "args": [*command[1:], "mcp"]}
    path = base / ".cursor" / "mcp.json"
    return [Target(NAME, "mcp", path, "json", (Entry(("mcpServers", "convodex"), server),))]


AGENT = Agent(
    name=NAME,
    label="Cursor",
    present=present,
    targets=targets,
    no_hook="Cursor's beforeSubmitPrompt hook cannot add context to a prompt",
    docs=("https://cursor.com/docs/context/mcp", "https://cursor.com/docs/agent/hooks"),
)
