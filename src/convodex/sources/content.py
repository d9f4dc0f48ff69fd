"""One display message's documents, built part by part (SPEC L2).

Agents store a message as text plus tool calls and tool results, in a handful of
shapes: Anthropic blocks (``text`` / ``tool_use`` / ``tool_result``, also Pi's
``toolCall``), Gemini parts (``functionCall`` / ``functionResponse``), or event
records with one field each. ``Parts`` takes them in the order met and numbers the
documents one way for every reader: the joined text is part 0, then each call and
result is part 1, 2, … Readers differ only in how they find the pieces.
"""

from __future__ import annotations

from typing import Any

import msgspec

from convodex.sources import drift
from convodex.sources.base import nested_text
from convodex.text.documents import Document, tool_call_document, tool_result_document

# Last: a Gemini-style function response wrapped in a result (iFlow's tool results).
RESULT_TEXT_KEYS = (
    "text",
    "content",
    "stdout",
    "output",
    "responseParts",
    "functionResponse",
    "response",
)
NO_TEXT_TYPES = frozenset(("thinking", "redacted_thinking", "image"))
# Blocks known to hold nothing to search: reasoning, pictures, a model fallback notice.
SILENT_BLOCKS = NO_TEXT_TYPES | {"fallback"}


def block_text(value: Any) -> str:
    """The text of a tool result's content (a string, blocks, or nested output)."""
    return nested_text(value, RESULT_TEXT_KEYS, NO_TEXT_TYPES)


class Parts:
    """Collects one message's text, tool calls and tool results.

    ``names`` maps call ids to tool names: calls met here are added, and a result
    that does not name its tool takes its call's name from it (a lazy mapping may
    scan the file only then).
    """

    __slots__ = ("names", "texts", "docs", "results")

    def __init__(self, names: dict[str, str] | None = None) -> None:
        self.names: dict[str, str] = {} if names is None else names
        self.texts: list[str] = []
        self.docs: list[Document] = []
        self.results = 0

    def text(self, value: Any) -> None:
        if isinstance(value, str) and value:
            self.texts.append(value)

    def call(self, call_id: Any, name: Any, arguments: Any) -> None:
        tool = name if isinstance(name, str) and name else None
        if isinstance(call_id, str) and tool is not None:
            self.names[call_id] = tool
        self.docs.append(tool_call_document(len(self.docs) + 1, tool, arguments))

    def result(self, call_id: Any, name: Any, content: str, flagged: bool = False) -> None:
        tool = name if isinstance(name, str) and name else None
        if tool is None and isinstance(call_id, str):
            tool = self.names.get(call_id)
        self.results += 1
        self.docs.append(tool_result_document(len(self.docs) + 1, tool, content, flagged))

    def blocks(self, content: Any) -> None:
        """Anthropic-style content: a string, or a list of text and tool blocks.

        Thinking and images are not documents; a block of a type not known keeps its
        text (under ``text`` or ``content``) and is counted (``drift``).
        """
        for part in content if isinstance(content, list) else [content]:
            if isinstance(part, str):
                self.text(part)
            elif isinstance(part, dict):
                kind = part.get("type")
                if kind == "text":
                    self.text(part.get("text"))
                elif kind == "tool_use":
                    self.call(part.get("id"), part.get("name"), part.get("input"))
                elif kind == "toolCall":
                    self.call(part.get("id"), part.get("name"), part.get("arguments"))
                elif kind == "tool_result":
                    flagged = part.get("is_error") is True
                    content_text = block_text(part.get("content"))
                    self.result(part.get("tool_use_id"), part.get("name"), content_text, flagged)
                elif kind not in SILENT_BLOCKS:
                    self.unknown(kind, part)

    def unknown(self, kind: Any, part: Any) -> None:
        """A part of a type its reader does not know: counted (``drift``), its text
        (under ``text`` or ``content``) kept, so its words are still found."""
        drift.note(drift.BLOCK, kind)
        self.text(nested_text(part, ("text", "content"), SILENT_BLOCKS))

    def build(self, role: str) -> tuple[str, list[Document]]:
        """The message's role and documents; a user message of only results is ``tool``."""
        text = "\n".join(self.texts)
        docs = self.docs
        if text.strip() and role in ("user", "assistant"):
            docs.insert(0, Document(0, "user_text" if role == "user" else "assistant_text", text))
        elif role == "user" and self.results and len(docs) == self.results:
            role = "tool"
        return role, docs


class ToolUse(msgspec.Struct):
    """A content block as far as naming a tool call goes; inputs and text are skipped."""

    type: str | None = None
    id: str | None = None
    name: str | None = None


class ToolUses(msgspec.Struct):
    """A message decoded for its ``tool_use`` blocks only (a light pass over a file)."""

    content: list[ToolUse] | str | None = None

    def add_to(self, names: dict[str, str]) -> None:
        for block in self.content if isinstance(self.content, list) else ():
            if block.type == "tool_use" and block.id and block.name:
                names[block.id] = block.name
