"""Round-trip edits of JSON and JSON-with-comments files: splices, never a re-dump.

Agents' settings files are the user's: their comments, key order, indentation and
unrelated settings must survive an install byte for byte. So this module parses the
text only to know *where* things are (a tree of spans), and every edit inserts or
removes a contiguous run of text; everything else is left exactly as it was.
``//`` and ``/* */`` comments and trailing commas are accepted where ``comments``
says the agent allows them; a file that does not parse is an ``EditError`` and is
never touched.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec

from convodex.errors import ConvodexError


class EditError(ConvodexError):
    """A file convodex cannot edit safely (not JSON, or not the shape it expects)."""


class Node(msgspec.Struct):
    """One value: its kind, its span, and for objects/arrays their children."""

    kind: str  # object, array, string, number, literal
    start: int
    end: int
    keys: list[str] = msgspec.field(default_factory=list)
    children: list[Node] = msgspec.field(default_factory=list)

    def member(self, key: str) -> Node | None:
        if self.kind != "object":
            return None
        for name, child in zip(self.keys, self.children, strict=True):
            if name == key:
                return child
        return None


class _Parser:
    def __init__(self, text: str, comments: bool) -> None:
        self.text = text
        self.at = 0
        self.comments = comments

    def fail(self, what: str) -> EditError:
        line = self.text.count("\n", 0, self.at) + 1
        return EditError(f"{what} at line {line}")

    def skip(self) -> None:
        text, n = self.text, len(self.text)
        while self.at < n:
            char = text[self.at]
            if char in " \t\r\n\ufeff":
                self.at += 1
            elif self.comments and text.startswith("//", self.at):
                end = text.find("\n", self.at)
                self.at = n if end < 0 else end + 1
            elif self.comments and text.startswith("/*", self.at):
                end = text.find("*/", self.at + 2)
                if end < 0:
                    raise self.fail("an unclosed comment")
                self.at = end + 2
            else:
                return

    def value(self, depth: int = 0) -> Node:
        if depth > 200:
            raise self.fail("nesting too deep")
        self.skip()
        if self.at >= len(self.text):
            raise self.fail("a value is missing")
        char = self.text[self.at]
        if char == "{":
            return self.container("object", "}", depth)
        if char == "[":
            return self.container("array", "]", depth)
        if char == '"':
            start = self.at
            self.string()
            return Node("string", start, self.at)
        return self.scalar()

    def string(self) -> str:
        start = self.at
        self.at += 1
        text = self.text
        while True:
            end = text.find('"', self.at)
            if end < 0 or "\n" in text[self.at : end]:
                raise self.fail("an unclosed string")
            backslashes = 0
            while text[end - 1 - backslashes] == "\\":
                backslashes += 1
            self.at = end + 1
            if backslashes % 2 == 0:
                break
        try:
            decoded = json.loads(text[start : self.at])
        except ValueError as exc:
            raise self.fail("a bad string") from exc
        assert isinstance(decoded, str)
        return decoded

    def scalar(self) -> Node:
        start = self.at
        text = self.text
        while self.at < len(text) and text[self.at] not in ",]}/ \t\r\n":
            self.at += 1
        token = text[start : self.at]
        try:
            json.loads(token)
        except ValueError as exc:
            raise self.fail(f"unexpected {token[:20]!r}") from exc
        kind = "literal" if token in ("true", "false", "null") else "number"
        return Node(kind, start, self.at)

    def container(self, kind: str, close: str, depth: int) -> Node:
        node = Node(kind, self.at, self.at)
        self.at += 1
        while True:
            self.skip()
            if self.at >= len(self.text):
                raise self.fail(f"an unclosed {kind}")
            if self.text[self.at] == close:
                self.at += 1
                node.end = self.at
                return node
            if node.children:
                if self.text[self.at] != ",":
                    raise self.fail(f"a missing comma in an {kind}")
                self.at += 1
                self.skip()
                if self.at < len(self.text) and self.text[self.at] == close:
                    if not self.comments:
                        raise self.fail("a trailing comma")
                    continue
            if kind == "object":
                if self.at >= len(self.text) or self.text[self.at] != '"':
                    raise self.fail("an object key that is not a string")
                key = self.string()
                self.skip()
                if self.at >= len(self.text) or self.text[self.at] != ":":
                    raise self.fail("a missing colon")
                self.at += 1
                node.keys.append(key)
            node.children.append(self.value(depth + 1))


def parse(text: str, comments: bool) -> Node:
    """The tree of ``text`` (one object at the top), or EditError."""
    parser = _Parser(text, comments)
    root = parser.value()
    parser.skip()
    if parser.at != len(text):
        raise parser.fail("text after the end")
    if root.kind != "object":
        raise EditError("the top level is not an object")
    return root


def load(text: str, comments: bool) -> Any:
    """The value of ``text`` as Python data (comments and trailing commas dropped)."""
    root = parse(text, comments)
    return _value(text, root)


def load_node(text: str, node: Node) -> Any:
    """The value of one node of ``text``'s tree."""
    return _value(text, node)


def _value(text: str, node: Node) -> Any:
    if node.kind == "object":
        return {k: _value(text, c) for k, c in zip(node.keys, node.children, strict=True)}
    if node.kind == "array":
        return [_value(text, c) for c in node.children]
    return json.loads(text[node.start : node.end])


def find(root: Node, path: Sequence[str]) -> Node | None:
    node: Node | None = root
    for key in path:
        node = node.member(key) if node is not None else None
    return node


# -- layout -----------------------------------------------------------------------------


def _line_indent(text: str, at: int) -> str:
    line = text.rfind("\n", 0, at) + 1
    head = text[line:at]
    return head[: len(head) - len(head.lstrip(" \t"))]


def indent_unit(text: str, root: Node) -> str:
    """The file's own indentation step (two spaces when it has none to copy)."""
    if root.children:
        first = _member_start(text, root, 0) if root.kind == "object" else root.children[0].start
        indent = _line_indent(text, first)[len(_line_indent(text, root.start)) :]
        if indent:
            return indent
    return "  "


def render(value: Any, indent: str, unit: str) -> str:
    """``value`` as JSON laid out like the file, starting at ``indent``: objects one
    member a line, arrays of plain values on one line."""
    if isinstance(value, dict) and value:
        inner = indent + unit
        members = [
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {render(v, inner, unit)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(members) + f"\n{indent}}}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        inner = indent + unit
        items = [f"{inner}{render(v, inner, unit)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{indent}]"
    return json.dumps(value, ensure_ascii=False)


# -- edits (each returns the new text) ---------------------------------------------------


def _child_indent(text: str, node: Node, unit: str) -> str:
    if node.children:
        first = _member_start(text, node, 0) if node.kind == "object" else node.children[0].start
        return _line_indent(text, first)
    return _line_indent(text, node.start) + unit


def insert_member(text: str, node: Node, key: str, value: Any, unit: str) -> str:
    """``text`` with ``"key": value`` added as the last member of object ``node``."""
    indent = _child_indent(text, node, unit)
    member = f"{json.dumps(key, ensure_ascii=False)}: {render(value, indent, unit)}"
    return _insert(text, node, member, indent)


def append_item(text: str, node: Node, value: Any, unit: str) -> str:
    """``text`` with ``value`` added as the last item of array ``node``."""
    indent = _child_indent(text, node, unit)
    return _insert(text, node, render(value, indent, unit), indent)


def _insert(text: str, node: Node, piece: str, indent: str) -> str:
    if node.children:
        at = node.children[-1].end
        return f"{text[:at]},\n{indent}{piece}{text[at:]}"
    at = node.start + 1
    closing = _line_indent(text, node.start)
    return f"{text[:at]}\n{indent}{piece}\n{closing}{text[at:]}"


def replace_value(text: str, node: Node, value: Any, unit: str) -> str:
    indent = _line_indent(text, node.start)
    return text[: node.start] + render(value, indent, unit) + text[node.end :]


def remove_child(text: str, parent: Node, index: int) -> str:
    """``text`` without the ``index``-th member or item of ``parent`` and its comma."""
    child = parent.children[index]
    if len(parent.children) == 1:
        return text[: parent.start + 1] + text[parent.end - 1 :]
    if index > 0:
        start, end = parent.children[index - 1].end, child.end  # from the comma before it
    else:
        start = _member_start(text, parent, 0) if parent.kind == "object" else child.start
        following = parent.children[1]
        end = _member_start(text, parent, 1) if parent.kind == "object" else following.start
    return text[:start] + text[end:]


def _member_start(text: str, parent: Node, index: int) -> int:
    """Where the key of member ``index`` begins (scanning back from its value)."""
    value = parent.children[index]
    colon = text.rfind(":", 0, value.start)
    close = text.rfind('"', 0, colon)
    at = close - 1
    while at > parent.start:
        if text[at] == '"':
            backslashes = 0
            while text[at - 1 - backslashes] == "\\":
                backslashes += 1
            if backslashes % 2 == 0:
                return at
        at -= 1
    return at
