"""A session's title, one rule for every path that shows one (SPEC L14).

The format's own title (a custom title, a summary) with its whitespace collapsed;
else the shown user text of the session's first message that has any (user text
parts only: not a tool call or its output), collapsed, at most 80 characters and
``…``; else none. Hits, listings, the session view and the readers that derive a
title all call these, so a session is titled the same wherever it appears.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from convodex.text.snippet import collapse_whitespace, head

TITLE_CHARS = 80


class Part(Protocol):
    """A part of a message (a reader's document, a session view's part)."""

    @property
    def kind(self) -> str: ...

    @property
    def text(self) -> str: ...


def own_title(title: str | None) -> str | None:
    """A format's own title as shown: whitespace collapsed, None when blank."""
    return (collapse_whitespace(title) or None) if title else None


def has_user_text(parts: Iterable[Part]) -> bool:
    """Whether a message can title its session (it has user text)."""
    return any(p.kind == "user_text" for p in parts)


def first_message_title(parts: Iterable[Part]) -> str | None:
    """The title the first message with user text gives: its user text, collapsed and
    cut to ``TITLE_CHARS``; None when it has none."""
    return user_text_title("\n".join(p.text for p in parts if p.kind == "user_text"))


def user_text_title(text: str) -> str | None:
    """``first_message_title`` for a reader that holds the user text itself."""
    return head(text, TITLE_CHARS) or None
