"""Recall's marked block is removed from user text wherever it sits (SPEC L18)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from convodex.sources.base import SourceMessage
from convodex.text import recall_block
from convodex.text.documents import Document

# Text that cannot spell a marker by accident.
plain = st.text(st.characters(blacklist_characters="<>"), max_size=60)


@given(before=plain, inside=st.text(max_size=80), after=plain)
def test_a_block_anywhere_leaves_only_the_text_around_it(
    before: str, inside: str, after: str
) -> None:
    text = before + recall_block.wrap(inside) + after
    assert recall_block.strip(text) == (before + after).strip()


@given(before=plain, inside=st.text(max_size=80))
def test_an_unclosed_block_runs_to_the_end(before: str, inside: str) -> None:
    assert recall_block.strip(f"{before}{recall_block.OPEN}\n{inside}") == before.strip()


@given(text=plain)
def test_text_without_a_marker_is_returned_as_is(text: str) -> None:
    assert recall_block.strip(text) is text


def test_readers_drop_blocks_from_user_text_only() -> None:
    block = recall_block.wrap('1. "old work" [ref abc#1]')
    message = SourceMessage(
        0,
        0,
        10,
        "user",
        None,
        [
            Document(0, "user_text", f"{block}\nthe real question"),
            Document(1, "tool_input", f"Bash echo {block}", "Bash"),
        ],
    )
    assert [d.text for d in message.documents] == ["the real question", f"Bash echo {block}"]
    only = SourceMessage(1, 0, 10, "user", None, [Document(0, "user_text", block)])
    assert only.documents == []  # a message that was nothing but a block says nothing
