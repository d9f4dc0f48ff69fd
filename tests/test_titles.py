"""One title rule (SPEC L14; issue 23): a session is titled the same in a search hit,
in the session tree and in the session view, by ``convodex.text.titles``."""

from __future__ import annotations

from pathlib import Path

import pytest

from convodex.catalog.plan import SearchRequest
from convodex.text.documents import Document
from convodex.text.titles import first_message_title, own_title
from helpers import service, write_session

LONG = "please   look at\nthe flaky deploy " + "and the retries " * 8


def test_the_rule_takes_user_text_only_collapsed_and_cut() -> None:
    parts = [
        Document(0, "tool_output", "a tool's output is never a title"),
        Document(1, "user_text", "  the  walrus\n"),
        Document(2, "user_text", "plan"),
    ]
    assert first_message_title(parts) == "the walrus plan"
    assert first_message_title([Document(0, "tool_input", "bash make")]) is None
    cut = first_message_title([Document(0, "user_text", LONG)])
    assert cut is not None and cut.endswith("…") and len(cut) == 81
    assert cut.startswith("please look at the flaky deploy and")
    assert own_title("  Deploy \n plan ") == "Deploy plan"
    assert own_title("   ") is None and own_title(None) is None


@pytest.mark.parametrize(
    "meta, first, expected",
    [
        # The format's own title, its whitespace collapsed.
        ({"name": "Deploy\n   plan"}, "walrus first words", "Deploy plan"),
        # None of its own: the first message with user text, collapsed and cut.
        ({}, LONG + "walrus", first_message_title([Document(0, "user_text", LONG)])),
    ],
)
def test_hit_tree_and_view_give_the_same_title(
    root: Path, cache_dir: Path, meta: dict[str, str], first: str, expected: str | None
) -> None:
    messages = [
        {"role": "assistant", "content": "an assistant greeting titles nothing"},
        {"role": "user", "content": first},
        {"role": "user", "content": "a later walrus message"},
    ]
    write_session(root, "titled", messages, meta)
    with service(cache_dir, [root]) as history:
        history.index()
        page = history.search(SearchRequest(query="walrus"))
        assert {hit.session_title for hit in page.hits} == {expected}
        (row,) = history.tree().rows
        assert row.title == expected
        assert history.document("titled").title == expected
