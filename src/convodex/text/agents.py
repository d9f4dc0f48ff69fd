"""Agent names: one spelling people read and write (``claude-code``), one key inside.

Formats are keyed ``claude_code`` in the catalog and the readers' registry; every
surface (text, JSON, HTTP, MCP) shows the hyphenated name, and every filter accepts
either spelling. Pure.
"""

from __future__ import annotations


def agent_label(fmt: str) -> str:
    """The name every surface shows: ``claude_code`` → ``claude-code``."""
    return fmt.replace("_", "-")


def agent_key(value: str) -> str:
    """The format key of a name as people write it: ``Claude-Code`` → ``claude_code``."""
    return value.strip().lower().replace("-", "_")
