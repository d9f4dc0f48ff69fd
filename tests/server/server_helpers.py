"""Helpers shared by the server tests (fixtures live in conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass

from convodex.server import Caller


@dataclass(frozen=True)
class People:
    """Two ordinary accounts and one administrator, with their tokens."""

    alice: Caller
    bob: Caller
    admin: Caller
    tokens: dict[str, str]


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def tool_call(command: str) -> dict[str, object]:
    """An assistant message that only calls a tool (nothing shown)."""
    return {
        "role": "assistant",
        "content": [
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"cmd": command}}
        ],
    }


def tool_result(text: str) -> dict[str, object]:
    return {"role": "toolResult", "toolCallId": "c1", "content": [{"type": "text", "text": text}]}
