"""Gemini CLI: ``mcpServers`` and ``hooks`` in ``~/.gemini/settings.json`` (user) or
``.gemini/settings.json`` (project), JSON with comments.

Hook contract: ``BeforeAgent`` sends the base fields and ``prompt`` on stdin and
appends ``hookSpecificOutput.additionalContext`` to the prompt for that turn;
``timeout`` is in milliseconds."""

from __future__ import annotations

from convodex.agents.spec import Agent, Scope, Target, settings_targets

NAME = "gemini"


def present(scope: Scope) -> bool:
    return (scope.home / ".gemini").is_dir()


def targets(scope: Scope, command: list[str]) -> list[Target]:
    base = scope.project if scope.project is not None else scope.home
    settings = base / ".gemini" / "settings.json"
    return settings_targets(NAME, settings, "BeforeAgent", command)


AGENT = Agent(
    name=NAME,
    label="Gemini CLI",
    present=present,
    targets=targets,
    docs=(
        "https://geminicli.com/docs/hooks/reference",
        "https://geminicli.com/docs/tools/mcp-server",
    ),
)
