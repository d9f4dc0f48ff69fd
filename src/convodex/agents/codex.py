"""Codex CLI: ``[mcp_servers.convodex]`` in ``$CODEX_HOME/config.toml`` (default
``~/.codex``) or a trusted project's ``.codex/config.toml``; TOML, edited with tomlkit.

No recall hook: Codex's hooks (``hooks.json``) are experimental, behind the
``codex_hooks`` feature flag; the MCP tools serve it until they settle."""

from __future__ import annotations

from convodex.agents.spec import Agent, Entry, Scope, Target, env_dir

NAME = "codex"


def present(scope: Scope) -> bool:
    return env_dir("CODEX_HOME", scope.home / ".codex").is_dir()


def targets(scope: Scope, command: list[str]) -> list[Target]:
    if scope.project is not None:
        path = scope.project / ".codex" / "config.toml"
    else:
        path = env_dir("CODEX_HOME", scope.home / ".codex") / "config.toml"
    server = {"command": command[0], "args": [*command[1:], "mcp"]}
    return [Target(NAME, "mcp", path, "toml", (Entry(("mcp_servers", "convodex"), server),))]


AGENT = Agent(
    name=NAME,
    label="Codex CLI",
    present=present,
    targets=targets,
    no_hook="Codex hooks are experimental (the codex_hooks feature flag)",
    docs=(
        "https://developers.openai.com/codex/mcp",
        "https://github.com/openai/codex/blob/main/docs/config.md",
    ),
)
