"""Qwen Code: ``mcpServers`` and ``hooks`` in ``~/.qwen/settings.json`` (user) or
``.qwen/settings.json`` (project), JSON with comments (a Gemini CLI fork).

Hook contract: ``UserPromptSubmit`` command hooks, the Claude Code shape (stdin JSON
with ``prompt``, ``hookSpecificOutput.additionalContext`` back); ``timeout`` in ms."""

from __future__ import annotations

from convodex.agents.spec import Agent, Scope, Target, env_dir, settings_targets

NAME = "qwen"


def present(scope: Scope) -> bool:
    return env_dir("QWEN_HOME", scope.home / ".qwen").is_dir()


def targets(scope: Scope, command: list[str]) -> list[Target]:
    if scope.project is not None:
        settings = scope.project / ".qwen" / "settings.json"
    else:
        settings = env_dir("QWEN_HOME", scope.home / ".qwen") / "settings.json"
    return settings_targets(NAME, settings, "UserPromptSubmit", command)


AGENT = Agent(
    name=NAME,
    label="Qwen Code",
    present=present,
    targets=targets,
    docs=(
        "https://qwenlm.github.io/qwen-code-docs/en/users/features/hooks",
        "https://qwenlm.github.io/qwen-code-docs/en/users/features/mcp/",
    ),
)
