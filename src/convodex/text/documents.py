"""What a local-history message contributes to search (SPEC L2).

Each message yields documents of five kinds. Tool text over 8 KiB is indexed as
its first 6 KiB and last 2 KiB; user and assistant text is never truncated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal

import msgspec

from convodex.errors import QueryError

Kind = Literal["user_text", "assistant_text", "tool_input", "tool_output", "tool_error"]

KINDS: Final[tuple[Kind, ...]] = (
    "user_text",
    "assistant_text",
    "tool_input",
    "tool_output",
    "tool_error",
)
DEFAULT_KINDS: Final[tuple[Kind, ...]] = ("user_text", "assistant_text", "tool_input", "tool_error")

TOOL_TEXT_LIMIT = 8 * 1024
TOOL_TEXT_HEAD = 6 * 1024
TOOL_TEXT_TAIL = 2 * 1024

_ERROR_PREFIXES = ("error:", "blocked:")


class Document(msgspec.Struct, frozen=True):
    """One searchable part of a message. ``part`` is stable within the message."""

    part: int
    kind: Kind
    text: str
    tool_name: str | None = None


def is_tool_error(content: str, flagged: bool = False) -> bool:
    """A tool result is an error when the format says so or its text reads like one."""
    if flagged:
        return True
    lowered = content.strip().lower()
    return lowered.startswith(_ERROR_PREFIXES) or "permission denied" in lowered


def clip_tool_text(text: str) -> str:
    """First 6 KiB + last 2 KiB of tool text over 8 KiB, cut on character boundaries."""
    if len(text) * 4 <= TOOL_TEXT_LIMIT:
        return text
    raw = text.encode("utf-8")
    if len(raw) <= TOOL_TEXT_LIMIT:
        return text
    first = raw[:TOOL_TEXT_HEAD].decode("utf-8", errors="ignore")
    last = raw[-TOOL_TEXT_TAIL:].decode("utf-8", errors="ignore")
    # errors="ignore" drops only the partial character at a cut edge.
    return f"{first}\n{last}"


def tool_input_text(name: str | None, arguments: str) -> str:
    return f"{name} {arguments}" if name else arguments


def tool_result_text(name: str | None, content: str) -> str:
    return f"{name} {content}" if name else content


def tool_result_document(
    part: int, name: str | None, content: str, flagged_error: bool = False
) -> Document:
    kind: Kind = "tool_error" if is_tool_error(content, flagged_error) else "tool_output"
    return Document(part, kind, clip_tool_text(tool_result_text(name, content)), name)


def arguments_text(arguments: Any) -> str:
    """Tool-call arguments as formats store them: a JSON string, or a JSON value."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return msgspec.json.encode(arguments).decode("utf-8")


def tool_call_document(part: int, name: str | None, arguments: Any) -> Document:
    """A tool call: its name and arguments (a string, or a JSON value encoded here)."""
    text = tool_input_text(name, arguments_text(arguments))
    return Document(part, "tool_input", clip_tool_text(text), name)


def parse_kinds(values: Sequence[str] | None) -> tuple[Kind, ...]:
    """Validate requested kinds; none means the default kinds."""
    if not values:
        return DEFAULT_KINDS
    out: list[Kind] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            if item not in KINDS:
                raise QueryError(f"unknown kind {item!r}; expected one of {', '.join(KINDS)}")
            if item not in out:
                out.append(item)
    return tuple(out) if out else DEFAULT_KINDS
