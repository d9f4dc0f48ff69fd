"""Document kinds (SPEC L2): tool errors, the 8 KiB tool-text rule, kind validation."""

from __future__ import annotations

import pytest

from convodex.errors import QueryError
from convodex.text.documents import (
    DEFAULT_KINDS,
    clip_tool_text,
    is_tool_error,
    parse_kinds,
    tool_result_document,
)


@pytest.mark.parametrize(
    "content",
    ["error: exit status 1", "  Blocked: by policy", "cat: /etc/shadow: Permission denied"],
)
def test_tool_error_by_content(content: str) -> None:
    assert is_tool_error(content)
    assert tool_result_document(0, "bash", content).kind == "tool_error"


def test_tool_error_flagged_by_format() -> None:
    assert tool_result_document(0, "bash", "all fine", flagged_error=True).kind == "tool_error"
    assert tool_result_document(0, "bash", "all fine").kind == "tool_output"


def test_tool_text_over_8_kib_keeps_first_6_and_last_2() -> None:
    text = "h" * 7000 + "MIDDLE" + "t" * 3000
    clipped = clip_tool_text(text)
    assert "MIDDLE" not in clipped
    assert clipped.startswith("h" * 6144) and clipped.endswith("t" * 2048)


def test_clip_cuts_on_character_boundaries() -> None:
    text = "é" * 6000  # 12,000 bytes of two-byte characters
    clipped = clip_tool_text(text)
    assert set(clipped) <= {"é", "\n"}
    assert len(clipped.encode()) <= 8 * 1024 + 1


def test_text_at_the_limit_is_untouched() -> None:
    text = "x" * 8192
    assert clip_tool_text(text) == text


def test_kinds() -> None:
    assert parse_kinds(None) == DEFAULT_KINDS
    assert "tool_output" not in DEFAULT_KINDS
    assert parse_kinds(["tool_output", "user_text,tool_error"]) == (
        "tool_output",
        "user_text",
        "tool_error",
    )
    with pytest.raises(QueryError, match="unknown kind"):
        parse_kinds(["bogus"])
