"""Snippet windows shared by local history search (L4) and the server (S3).

A snippet is the text with whitespace runs collapsed to one space, cut to a window
around a match, with ``…`` on each side that was cut. Python strings index code
points, so a window never splits a character.
"""

from __future__ import annotations

ELLIPSIS = "…"


def collapse_whitespace(text: str) -> str:
    return " ".join(text.split())


def _collapse(text: str) -> str:
    r"""Each whitespace run as one space, a run at either end too: ``re.sub(r"\s+", " ",
    text)`` (``str.split`` and ``\s`` know the same whitespace), in C: a window's three
    stretches cost 3 µs each instead of 15."""
    inner = collapse_whitespace(text)
    if not inner:
        return " " if text else ""
    if text[0].isspace():
        inner = " " + inner
    if text[-1].isspace():
        inner += " "
    return inner


def window(text: str, start: int, end: int, radius: int = 60) -> str:
    """``radius`` characters either side of ``text[start:end]``, whitespace collapsed.

    Only a stretch of the text either side is collapsed, not all of it (a tool's
    output can be megabytes, read for one snippet): once a stretch collapses to a few
    characters more than the radius, everything beyond it only decides that the side
    is cut. A stretch that collapses to less (long whitespace runs) is taken whole.
    """
    reach = 4 * max(radius, 0) + 64
    low, high = max(0, start - reach), min(len(text), end + reach)
    before = _collapse(text[low:start])
    if low and len(before) < radius + 4:
        before, low = _collapse(text[:start]), 0
    after = _collapse(text[end:high])
    if high < len(text) and len(after) < radius + 4:
        after, high = _collapse(text[end:]), len(text)
    if not low:
        before = before.lstrip()
    if high == len(text):
        after = after.rstrip()
    match = _collapse(text[start:end])
    if before.endswith(" ") and match.startswith(" "):
        match = match[1:]
    if match.endswith(" ") and after.startswith(" "):
        after = after[1:]
    left = before[-radius:] if radius > 0 else ""
    right = after[:radius] if radius > 0 else ""
    prefix = ELLIPSIS if len(left) < len(before) else ""
    suffix = ELLIPSIS if len(right) < len(after) else ""
    return f"{prefix}{left}{match}{right}{suffix}"


def head(text: str, length: int = 120) -> str:
    """The start of ``text`` collapsed, for hits whose match cannot be located."""
    collapsed = collapse_whitespace(text)
    if len(collapsed) <= length:
        return collapsed
    return collapsed[:length] + ELLIPSIS


def find_casefold(text: str, needle: str) -> tuple[int, int] | None:
    """Span of the first case-insensitive occurrence of ``needle`` in ``text``.

    Lower-casing can change a string's length (``İ`` → ``i̇``), so positions are
    mapped back to the original text instead of assumed equal.
    """
    if not needle:
        return None
    low_needle = needle.lower()
    low_text = text.lower()
    if len(low_text) == len(text):
        # Every character lowered to exactly one character: positions agree.
        at = low_text.find(low_needle)
        return None if at < 0 else (at, at + len(low_needle))
    # Slow path: map each lowered position back to its source character.
    origin: list[int] = []
    for i, ch in enumerate(text):
        origin.extend([i] * len(ch.lower()))
    at = low_text.find(low_needle)
    if at < 0:
        return None
    last = at + len(low_needle) - 1
    return origin[at], origin[last] + 1


def literal_snippet(text: str, needle: str, radius: int = 60) -> str:
    """S3 snippet: ``radius`` characters either side of the first occurrence of ``needle``."""
    span = find_casefold(text, needle)
    if span is None:
        return head(text, 2 * radius)
    return window(text, span[0], span[1], radius)
