"""Agent names: one spelling people read and write (``claude-code``), one key inside.

Formats are keyed ``claude_code`` in the catalog and the readers' registry; every
surface (text, JSON, HTTP, MCP) shows the hyphenated name, and every filter accepts
either spelling, and the names people call agents by (``claude``, ``copilot``). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

# What people call an agent (its command, its product's short name) -> its format key.
ALIASES = {
    "claude": "claude_code",
    "claude_cli": "claude_code",
    "codex_cli": "codex",
    "gemini_cli": "gemini",
    "qwen_code": "qwen",
    "copilot": "copilot_cli",
    "github_copilot": "copilot_cli",
    "copilot_chat": "copilot_vscode",
    "cursor_agent": "cursor",
    "cursor_cli": "cursor",
    "factory": "droid",
    "kilo": "kilo_code",
    "roo": "roo_code",
    "chatgpt": "chat_export",
    "convodex": "session_log",
}


def agent_label(fmt: str) -> str:
    """The name every surface shows: ``claude_code`` → ``claude-code``."""
    return fmt.replace("_", "-")


def agent_key(value: str) -> str:
    """The format key of a name as people write it: ``Claude-Code`` → ``claude_code``,
    ``claude`` → ``claude_code`` (an alias)."""
    key = value.strip().lower().replace("-", "_").replace(" ", "_")
    return ALIASES.get(key, key)


def did_you_mean(value: str, known: Iterable[str]) -> str:
    """`` did you mean claude-code?`` for a near miss among ``known`` keys, else ""."""
    import difflib  # here: every search loads this module, few ever miss an agent

    keys = sorted(set(known))
    names = {agent_label(k): k for k in keys} | {agent_label(a): ALIASES[a] for a in ALIASES}
    close = difflib.get_close_matches(agent_label(agent_key(value)), list(names), n=1, cutoff=0.6)
    if not close or names[close[0]] not in keys:
        return ""
    return f" did you mean {agent_label(names[close[0]])}?"
