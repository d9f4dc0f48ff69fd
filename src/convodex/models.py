"""The typed results every surface returns, encoded in one place.

Each result is a ``msgspec.Struct`` whose fields are snake_case in Python and
camelCase on the wire (SPEC L4: all JSON convodex emits uses camelCase keys). CLI
``--json``, HTTP and MCP all encode through :func:`encode`, so a field is named once.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Model(msgspec.Struct, rename="camel", kw_only=True):
    """Base of every result model: camelCase JSON, keyword construction."""


class ServerHit(Model, frozen=True):
    """One conversation-server hit (SPEC S3), newest first."""

    session_id: str
    session_title: str
    seq: int
    role: str
    snippet: str
    ts: str
    owner_id: str


_encoder = msgspec.json.Encoder()


def encode(value: Any) -> bytes:
    """JSON bytes of a model (or of plain data holding models)."""
    return _encoder.encode(value)


def to_builtins(value: Any) -> Any:
    """Plain dicts and lists with the wire's camelCase keys (for shaping and tests)."""
    return msgspec.to_builtins(value)
