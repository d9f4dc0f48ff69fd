"""Snippet windows: whitespace collapsed, ellipsis on cut sides, never a split character."""

from __future__ import annotations

from convodex.text.snippet import find_casefold, head, literal_snippet, window


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
