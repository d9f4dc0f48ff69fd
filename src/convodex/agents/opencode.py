"""OpenCode: ``mcp.convodex`` (``type: local``, the command as an array) in
``$XDG_CONFIG_HOME/opencode/opencode.json[c]`` (user) or ``opencode.json[c]`` in the
project; JSON with comments. An existing ``.jsonc`` file is the one edited.

No recall hook: OpenCode extends itself with JavaScript plugins, not hook commands."""

from __future__ import annotations

import os
from pathlib import Path

from convodex.agents.spec import Agent, Entry, Scope, Target

NAME = "opencode"


def _config_dir(scope: Scope) -> Path:
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else scope.home / ".config") / "opencode"


def present(scope: Scope) -> bool:
    return _config_dir(scope).is_dir()


def targets(scope: Scope, command: list[str]) -> list[Target]:
    folder = scope.project if scope.project is not None else _config_dir(scope)
    path = folder / "opencode.jsonc"
    if not path.is_file():
        path = folder / "opencode.json"
    server = {"type": "local", "command": [*command, "mcp"], "enabled": True}
    return [Target(NAME, "mcp", path, "jsonc", (Entry(("mcp", "convodex"), server),))]


AGENT = Agent(
    name=NAME,
    label="OpenCode",
    present=present,
    targets=targets,
    no_hook="OpenCode runs JavaScript plugins, not hook commands",
    docs=("https://opencode.ai/docs/mcp-servers/", "https://opencode.ai/docs/config/"),
)
