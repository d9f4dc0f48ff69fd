"""The marked block recall injects into an agent's context (SPEC L18), and its removal.

An agent records what a hook injected; some put it in the user's own message. Were
that text indexed as the user's words, recall would find its own earlier blocks and
feed on itself. So every block starts with ``OPEN`` on a line of its own and ends
with ``CLOSE``, and the readers drop marked text from user text before it becomes a
document (``strip``): a block is never searchable, never a title, never recalled.
"""

from __future__ import annotations

import re
from typing import Final

OPEN: Final = "<convodex-recall>"
CLOSE: Final = "</convodex-recall>"

# An unclosed block (cut by the agent's own limit) runs to the end of the text.
_BLOCK = re.compile(re.escape(OPEN) + r".*?(?:" + re.escape(CLOSE) + r"|\Z)", re.DOTALL)


def has_block(text: str) -> bool:
    """Cheap test first: the readers call this for every user message."""
    return OPEN in text


def strip(text: str) -> str:
    """``text`` without its recall blocks (and the blank space they leave)."""
    if OPEN not in text:
        return text
    return _BLOCK.sub("", text).strip()


def wrap(body: str) -> str:
    """A block: the marker line, ``body``, the closing line."""
    return f"{OPEN}\n{body}\n{CLOSE}"


# Bytes the markers and their newlines add to a body (for budgets).
OVERHEAD: Final = len(OPEN) + len(CLOSE) + 2
