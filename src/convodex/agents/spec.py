"""What an agent's wiring is made of: the files and the entries convodex adds."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec

Format = Literal["json", "jsonc", "toml"]
Purpose = Literal["mcp", "hook"]


class Entry(msgspec.Struct, frozen=True):
    """One thing convodex puts in a file: the object member at ``path`` (its last key
    is the name) set to ``value``; or, with ``marker``, an item of the array at
    ``path`` told apart from the user's own items by ``marker`` in its text."""

    path: tuple[str, ...]
    value: Any
    marker: str | None = None

    def label(self) -> str:
        return ".".join(self.path) + ("[]" if self.marker else "")


class Target(msgspec.Struct, frozen=True):
    """One config file of one agent and what convodex adds to it."""

    agent: str
    purpose: Purpose
    path: Path
    format: Format
    entries: tuple[Entry, ...]


class Scope(msgspec.Struct, frozen=True):
    """User-wide (``project`` None) or one project's own files."""

    home: Path
    project: Path | None = None


class Agent(msgspec.Struct, frozen=True):
    """An agent convodex can wire: its name, how to tell it is installed, its targets
    for a scope, and when it has no recall hook, why not."""

    name: str
    label: str
    present: Callable[[Scope], bool]
    targets: Callable[[Scope, list[str]], list[Target]]
    no_hook: str | None = None  # why there is no recall hook for this agent
    no_project: str | None = None  # why --project is not offered
    docs: tuple[str, ...] = ()


def launcher() -> list[str]:
    """How agents start convodex: the installed command by its absolute path (agents
    run with their own PATH), else this interpreter with ``-m convodex``."""
    found = shutil.which("convodex")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "convodex"]


def shell(words: list[str]) -> str:
    return shlex.join(words)


def env_dir(name: str, default: Path) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else default


def hook_command(command: list[str], agent: str) -> str:
    return shell([*command, "recall", "--agent", agent])


def recall_marker(agent: str) -> str:
    """Text only convodex's own hook item contains (its command line's tail)."""
    return f"recall --agent {agent}"


def settings_targets(name: str, settings: Path, event: str, command: list[str]) -> list[Target]:
    """The Gemini CLI shape (Qwen Code inherits it): ``mcpServers`` and a named command
    hook under ``hooks.<event>`` in one ``settings.json`` with comments; ms timeouts."""
    server = {"command": command[0], "args": [*command[1:], "mcp"]}
    hook = {
        "hooks": [
            {
                "type": "command",
                "name": "convodex-recall",
                "command": hook_command(command, name),
                "timeout": 5000,
            }
        ]
    }
    return [
        Target(name, "mcp", settings, "jsonc", (Entry(("mcpServers", "convodex"), server),)),
        Target(
            name, "hook", settings, "jsonc", (Entry(("hooks", event), hook, recall_marker(name)),)
        ),
    ]
