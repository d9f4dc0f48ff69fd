"""Responses that carry result models, encoded in the one place models are encoded."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from convodex.models import encode


class ModelResponse(Response):
    """A result model (or plain data holding models) as JSON, via ``models.encode``."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return encode(content)
