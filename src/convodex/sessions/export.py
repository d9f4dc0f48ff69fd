"""A whole session in one of the export formats (SPEC L15 ``export``): Markdown and JSON
from ``render``, the self-contained HTML page from ``page`` (which builds on
``render``, so the choice between them lives above both)."""

from __future__ import annotations

from convodex.errors import QueryError
from convodex.models import SessionDocument
from convodex.sessions.render import json_text, markdown

FORMATS = ("markdown", "html", "json")


def export(document: SessionDocument, fmt: str) -> str:
    """The whole session in one of the export formats, every tool call in full."""
    if fmt == "markdown":
        return markdown(document, tools=True)
    if fmt == "html":
        from convodex.sessions.page import html

        return html(document)
    if fmt == "json":
        return json_text(document)
    raise QueryError(f"format must be one of {', '.join(FORMATS)}")
