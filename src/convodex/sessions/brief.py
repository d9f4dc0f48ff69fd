"""The hand-off brief (SPEC L15): a session summed up for another agent, in Markdown.

Built from the session alone, no model involved: its title and workspace, the goal
(the first user message), the files and commands its tool calls touched, the tool
errors it never got past, and as many of its last turns as fit. Bounded: the whole
brief is at most ``max_bytes`` of UTF-8 (8 KiB by default), cut on character
boundaries, the last turns giving way first.
"""

from __future__ import annotations

import re
from collections import Counter

import msgspec

from convodex.models import SessionDocument, SessionEntry
from convodex.sessions.render import agent_label, body, span
from convodex.text.snippet import collapse_whitespace

DEFAULT_MAX_BYTES = 8 * 1024
MIN_MAX_BYTES = 1024
GOAL_SHARE = 4  # the goal takes at most a quarter of the budget
LIST_ITEMS = 12
ITEM_CHARS = 160
TURN_CHARS = 1200
FILE_KEYS = ("file_path", "filePath", "path", "absolute_path", "notebook_path", "filename", "file")
COMMAND_KEYS = ("command", "cmd", "commands")
_PATCH_FILE = re.compile(r"\*\*\* (?:Update|Add|Delete) File: (\S[^\n\\]*)")


def clip_bytes(text: str, limit: int, mark: str = "…") -> str:
    """``text`` in at most ``limit`` UTF-8 bytes, cut on a character boundary."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    room = max(0, limit - len(mark.encode("utf-8")))
    return raw[:room].decode("utf-8", errors="ignore") + mark


def clip_chars(text: str, limit: int) -> str:
    line = collapse_whitespace(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _arguments(part_text: str, tool: str | None) -> object:
    raw = part_text[len(tool) :].lstrip() if tool and part_text.startswith(tool) else part_text
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return raw


def touched(document: SessionDocument) -> tuple[list[str], list[str]]:
    """The files and the commands the session's tool calls named, most used first."""
    files: Counter[str] = Counter()
    commands: Counter[str] = Counter()
    for entry in document.messages:
        for part in entry.parts:
            if part.kind != "tool_input":
                continue
            args = _arguments(part.text, part.tool_name)
            if isinstance(args, dict):
                for key in FILE_KEYS:
                    if isinstance(args.get(key), str) and args[key].strip():
                        files[args[key].strip()] += 1
                for key in COMMAND_KEYS:
                    value = args.get(key)
                    if isinstance(value, list):
                        value = " ".join(str(v) for v in value)
                    if isinstance(value, str) and value.strip():
                        commands[clip_chars(value, ITEM_CHARS)] += 1
            text = args if isinstance(args, str) else part.text
            for found in _PATCH_FILE.findall(text):
                files[found.strip()] += 1
    return [f for f, _ in files.most_common()], [c for c, _ in commands.most_common()]


def unresolved_errors(document: SessionDocument) -> list[str]:
    """Tool errors after which the same tool never succeeded again in the session."""
    last_ok: dict[str | None, int] = {}
    errors: list[tuple[int, str | None, str]] = []
    order = 0
    for entry in document.messages:
        for part in entry.parts:
            order += 1
            if part.kind == "tool_output":
                last_ok[part.tool_name] = order
            elif part.kind == "tool_error":
                first = next((ln for ln in body(part).splitlines() if ln.strip()), "")
                errors.append((order, part.tool_name, first))
    return [
        f"{tool or 'tool'}: {clip_chars(line, ITEM_CHARS)}"
        for at, tool, line in errors
        if last_ok.get(tool, 0) < at
    ]


def _turn(entry: SessionEntry) -> str | None:
    said = "\n".join(p.text for p in entry.parts if p.kind in ("user_text", "assistant_text"))
    if not said.strip():
        return None
    who = (
        "User" if entry.role == "user" else "Assistant" if entry.role == "assistant" else entry.role
    )
    return f"**{who}** (#{entry.message_index}): {clip_bytes(said.strip(), TURN_CHARS)}"


def _bullets(title: str, items: list[str], code: bool) -> list[str]:
    if not items:
        return []
    shown = items[:LIST_ITEMS]
    lines = ["", f"## {title}", ""]
    lines += [f"- `{i.replace('`', chr(39))}`" if code else f"- {i}" for i in shown]
    if len(items) > len(shown):
        lines.append(f"- … and {len(items) - len(shown)} more")
    return lines


def brief(document: SessionDocument, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The Markdown brief, at most ``max_bytes`` of UTF-8."""
    max_bytes = max(MIN_MAX_BYTES, max_bytes)
    title = collapse_whitespace(document.title or document.session_id)
    head = [
        f"# Continuing: {title}",
        "",
        f"This continues a session from {agent_label(document.agent)} "
        f"(session `{document.session_id}`{', ' + span(document) if span(document) else ''}). "
        "Its transcript is summed up below; pick up where it stopped.",
        "",
        f"- Workspace: `{document.project or 'unknown'}`",
        f"- Transcript: `{document.session_path}`",
        f"- Messages: {document.message_count}",
    ]
    first = next((e for e in document.messages if e.role == "user" and _turn(e)), None)
    if first is not None:
        goal = "\n".join(p.text for p in first.parts if p.kind == "user_text").strip()
        head += ["", "## Goal (the first request)", "", clip_bytes(goal, max_bytes // GOAL_SHARE)]
    files, commands = touched(document)
    head += _bullets("Files touched", files, code=True)
    head += _bullets("Commands run", commands, code=True)
    head += _bullets("Unresolved tool errors", unresolved_errors(document), code=False)
    text = "\n".join(head)
    turns: list[str] = []
    budget = max_bytes - len(text.encode("utf-8")) - 64
    for entry in reversed(document.messages):
        turn = _turn(entry)
        if turn is None or turn.startswith(f"**User** (#{first.message_index if first else -1})"):
            continue
        size = len(turn.encode("utf-8")) + 2
        if size > budget:
            break
        turns.insert(0, turn)
        budget -= size
    if turns:
        text += "\n\n## Last turns\n\n" + "\n\n".join(turns)
    return clip_bytes(text + "\n", max_bytes)
