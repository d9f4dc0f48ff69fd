"""Snippet windows: whitespace collapsed, ellipsis on cut sides, never a split character."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from convodex.text.snippet import ELLIPSIS, find_casefold, head, literal_snippet, window


def test_window_cuts_both_sides_with_ellipsis() -> None:
    text = "a" * 100 + " needle " + "b" * 100
    start = text.index("needle")
    out = window(text, start, start + 6, radius=10)
    assert out == "…" + "a" * 9 + " needle " + "b" * 9 + "…"


def test_window_without_cut_has_no_ellipsis() -> None:
    assert window("find the needle here", 9, 15, radius=60) == "find the needle here"


def test_whitespace_runs_collapse() -> None:
    text = "line one\n\n\t  line   two needle\n\nend"
    start = text.index("needle")
    assert window(text, start, start + 6) == "line one line two needle end"


def whole_window(text: str, start: int, end: int, radius: int) -> str:
    """The window as first written: the whole text either side collapsed."""
    ws = re.compile(r"\s+")
    before = ws.sub(" ", text[:start]).lstrip()
    match = ws.sub(" ", text[start:end])
    after = ws.sub(" ", text[end:]).rstrip()
    if before.endswith(" ") and match.startswith(" "):
        match = match[1:]
    if match.endswith(" ") and after.startswith(" "):
        after = after[1:]
    left = before[-radius:] if radius > 0 else ""
    right = after[:radius] if radius > 0 else ""
    prefix = ELLIPSIS if len(left) < len(before) else ""
    suffix = ELLIPSIS if len(right) < len(after) else ""
    return f"{prefix}{left}{match}{right}{suffix}"


# Whitespace beyond ASCII too (no-break, ideographic, line separator, NEL, a file
# separator): the window splits on what ``str.split`` calls whitespace, the oracle on
# what ``\s`` matches, and the two must agree.
PIECES = st.sampled_from(
    ["a", "bc", "needle", " ", "  ", "\n\n\t ", " " * 90, "x" * 70, "é"]
    + ["\xa0", "\u3000", "\u2028", "\x85", "\x1c", "\u200b"]
)


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(PIECES, max_size=60),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    radius=st.integers(0, 30),
)
def test_a_window_of_a_stretch_is_the_window_of_the_whole_text(
    pieces: list[str], cut: tuple[float, float], radius: int
) -> None:
    """Collapsing a stretch either side gives what collapsing the whole text gave,
    with runs of whitespace long enough to reach past a stretch."""
    text = "".join(pieces)
    start, end = sorted(int(f * len(text)) for f in cut)
    assert window(text, start, end, radius) == whole_window(text, start, end, radius)


def test_a_window_in_a_megabyte_output_is_the_whole_texts() -> None:
    text = "line\n" * 200_000 + "the needle here" + "\n  more" * 200_000
    start = text.index("needle")
    assert window(text, start, start + 6, 20) == whole_window(text, start, start + 6, 20)


def test_head_of_long_text() -> None:
    assert head("word " * 100, 20).endswith("…")
    assert head("short", 20) == "short"


def test_find_casefold_maps_positions_back() -> None:
    text = "İstanbul needle"
    span = find_casefold(text, "NEEDLE")
    assert span is not None and text[span[0] : span[1]] == "needle"
    assert find_casefold("Čas", "čas") == (0, 3)
    assert find_casefold("abc", "x") is None


def test_literal_snippet_keeps_emoji_whole() -> None:
    text = "😀" * 70 + "hit" + "😀" * 70
    out = literal_snippet(text, "hit")
    assert out == "…" + "😀" * 60 + "hit" + "😀" * 60 + "…"
