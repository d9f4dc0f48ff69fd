"""S1 shown text: what a person saw, and nothing they did not."""

from __future__ import annotations

import json

from convodex.text.shown import projected_text, shown_text


def test_string_content_is_shown_as_is() -> None:
    assert shown_text({"role": "user", "content": "why does  go test fail?"}) == (
        "why does  go test fail?"
    )


def test_text_parts_are_joined_and_tool_calls_and_thinking_are_not() -> None:
    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "secret plan", "text": "secret plan"},
            {"type": "text", "text": "Running it."},
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"cmd": "go test"}},
            {"type": "text", "text": "Done."},
        ],
    }
    assert shown_text(message) == "Running it.\nDone."


def test_think_blocks_are_removed_in_any_case() -> None:
    message = {
        "role": "assistant",
        "content": "<think>hidden one</think>Visible <THINKING>\nhidden two\n</THINKING>end",
    }
    assert shown_text(message) == "Visible end"


def test_tool_results_and_system_messages_show_nothing() -> None:
    assert shown_text({"role": "toolResult", "content": [{"type": "text", "text": "x"}]}) == ""
    assert shown_text({"role": "system", "content": "you are helpful"}) == ""


def test_platform_envelopes_show_their_text() -> None:
    envelope = {"platform": "slack", "channel": "C1", "user": "U7", "text": "deploy at noon"}
    assert shown_text({"role": "user", "content": envelope}) == "deploy at noon"
    assert shown_text({"role": "user", "content": json.dumps(envelope)}) == "deploy at noon"
    # JSON that is not an envelope stays as typed.
    typed = '{"text": "not an envelope"}'
    assert shown_text({"role": "user", "content": typed}) == typed


def test_projection_replaces_nul_and_skips_blank_text() -> None:
    assert projected_text({"role": "user", "content": "a\x00b"}) == "a\ufffdb"
    assert projected_text({"role": "assistant", "content": "<think>only</think>  "}) is None
    assert projected_text({"role": "user", "content": "lone \ud800 half"}) == "lone \ufffd half"
