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
