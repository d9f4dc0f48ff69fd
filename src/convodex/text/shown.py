"""What a conversation-server message shows to people (SPEC S1).

The server projects and searches only what a person saw in the conversation, so
hidden reasoning, tool-call arguments and transport envelopes must never become
searchable. Pure functions: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# Blocks some models inline in their visible text; people never saw them.
_THINK = re.compile(r"<(think|thinking)>.*?</\1\s*>", re.DOTALL | re.IGNORECASE)

# Content parts that are never shown even if they carry a ``text`` field.
_HIDDEN_PART_TYPES = frozenset(
    {
        "thinking",
        "redacted_thinking",
        "reasoning",
        "toolCall",
        "tool_call",
        "tool_use",
        "function_call",
        "toolResult",
        "tool_result",
    }
)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

SHOWN_ROLES = frozenset({"user", "assistant"})


def _envelope_text(value: Any) -> str | None:
    """The ``text`` of a platform envelope (a channel adapter's wrapper), if ``value`` is one.

    An envelope is a JSON object carrying a string ``text`` plus a string ``platform``;
    it arrives either as the message's content object or serialized into a string.
    """
    if isinstance(value, str):
        stripped = value.strip()
        if not (stripped.startswith("{") and stripped.endswith("}")):
            return None
        try:
            value = json.loads(stripped)
        except ValueError:
            return None
    if (
        isinstance(value, Mapping)
        and isinstance(value.get("text"), str)
        and isinstance(value.get("platform"), str)
    ):
        return str(value["text"])
    return None


def remove_think_blocks(text: str) -> str:
    """Drop ``<think>…</think>`` and ``<thinking>…</thinking>`` blocks (closed ones only)."""
    return _THINK.sub("", text)


def shown_text(message: Mapping[str, Any]) -> str:
    """The text a person saw for ``message``; empty when nothing was shown.

    A string ``content`` counts as is (or its envelope's ``text``); a list counts the
    ``text`` of every part that has one, joined by newlines, except reasoning and tool
    parts. Tool results show nothing here: they are never projected.
    """
    role = message.get("role")
    if role not in SHOWN_ROLES:
        return ""
    content = message.get("content")
    text: str
    wrapped = _envelope_text(content)
    if wrapped is not None:
        text = wrapped
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        pieces: list[str] = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
                continue
            if not isinstance(part, Mapping) or part.get("type") in _HIDDEN_PART_TYPES:
                continue
            part_text = part.get("text")
            if isinstance(part_text, str):
                wrapped_part = _envelope_text(part_text)
                pieces.append(part_text if wrapped_part is None else wrapped_part)
        text = "\n".join(pieces)
    else:
        return ""
    return remove_think_blocks(text)


def projected_text(message: Mapping[str, Any]) -> str | None:
    """Shown text as stored in a search row, or ``None`` when the entry gets no row.

    PostgreSQL text cannot hold NUL, so NUL becomes U+FFFD here and only here: the
    journal keeps the original payload and its hash byte for byte.
    """
    text = shown_text(message)
    if not text.strip():
        return None
    return storable(text)


def storable(text: str) -> str:
    """``text`` with NUL and lone surrogates (legal in JSON escapes, not in UTF-8 or
    PostgreSQL text) replaced by U+FFFD: how projected rows and snippets carry them."""
    return _LONE_SURROGATE.sub("\ufffd", text.replace("\x00", "\ufffd"))
