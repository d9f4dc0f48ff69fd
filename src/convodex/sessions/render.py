"""A session's effective branch as people read it (SPEC L15): text, Markdown, HTML, JSON.

Text and Markdown are what ``show`` prints: user and assistant text in full, each tool
call and result folded to one line unless ``tools`` unfolds them. Export writes
Markdown, HTML or JSON with every tool call in full. The HTML is one self-contained
file: inline CSS, no script, no external asset, readable offline and printable.
Content is always text: HTML escapes every character of it.
"""

from __future__ import annotations

import re
from datetime import datetime

import msgspec

from convodex.errors import NotFound, QueryError
from convodex.models import SessionDocument, SessionPart, encode
from convodex.text.snippet import collapse_whitespace

FOLD_WIDTH = 100
TOOL_KINDS = ("tool_input", "tool_output", "tool_error")
# One-line markers of folded parts: a call, its result, a failed result.
MARKS = {"tool_input": "→", "tool_output": "←", "tool_error": "✗"}
ROLE_NAMES = {"user": "User", "assistant": "Assistant", "tool": "Tool"}


def window(document: SessionDocument, focus: int | None, around: int | None) -> SessionDocument:
    """Only the ``around`` messages either side of message ``focus`` (the whole session
    without ``around``); an index outside the effective branch is a clear error."""
    if focus is None:
        if around is not None:
            raise QueryError("--around needs a ref that names a message (id#N)")
        return document
    positions = {e.message_index: n for n, e in enumerate(document.messages)}
    if focus not in positions:
        raise NotFound(f"message #{focus} is not in this session's effective branch")
    if around is None:
        return document
    if around < 0:
        raise QueryError("--around must be 0 or more")
    at = positions[focus]
    kept = document.messages[max(0, at - around) : at + around + 1]
    return msgspec.structs.replace(document, messages=kept)


def local_time(epoch_ms: int | None) -> str:
    if epoch_ms is None:
        return ""
    return datetime.fromtimestamp(epoch_ms / 1000).strftime("%Y-%m-%d %H:%M")


def iso_time(epoch_ms: int | None) -> str:
    if epoch_ms is None:
        return ""
    return datetime.fromtimestamp(epoch_ms / 1000).astimezone().isoformat(timespec="seconds")


def span(document: SessionDocument) -> str:
    start, end = local_time(document.started_at), local_time(document.ended_at)
    if start and end and start != end:
        return f"{start} – {end}"
    return start or end


def agent_label(agent: str) -> str:
    from convodex.text.agents import agent_label as label

    return label(agent)


def body(part: SessionPart) -> str:
    """A tool part's text without the tool name its document starts with."""
    if part.tool_name and part.kind in TOOL_KINDS and part.text.startswith(part.tool_name):
        return part.text[len(part.tool_name) :].lstrip()
    return part.text


def folded(part: SessionPart, width: int = FOLD_WIDTH) -> str:
    """A tool call or result on one line: marker, tool, the start of its text."""
    name = part.tool_name or "tool"
    line = collapse_whitespace(body(part))
    room = max(10, width - len(name) - 4)
    if len(line) > room:
        line = line[: room - 1] + "…"
    return f"{MARKS.get(part.kind, '·')} {name}: {line}" if line else f"{MARKS[part.kind]} {name}"


def facts(document: SessionDocument, home: str | None = None) -> list[str]:
    """agent · project · dates · count, as one header line's pieces."""
    project = document.project or ""
    if home and project.startswith(home.rstrip("/") + "/"):
        project = "~" + project[len(home.rstrip("/")) :]
    count = document.message_count
    pieces = [agent_label(document.agent), project, span(document)]
    pieces.append(f"{count} message{'' if count == 1 else 's'}")
    return [p for p in pieces if p]


# -- text ------------------------------------------------------------------------------


class TextStyle:
    """ANSI styles on a terminal, nothing when piped."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text


ROLE_COLORS = {"user": "1;36", "assistant": "1;32", "tool": "1;33"}


def text(
    document: SessionDocument,
    *,
    tools: bool = False,
    focus: int | None = None,
    color: bool = False,
    home: str | None = None,
) -> str:
    """What ``show`` prints: a header, then each message under its own rule."""
    style = TextStyle(color)
    out = [style(document.title or document.session_id, "1")]
    out.append(" · ".join(facts(document, home)))
    out.append(style(document.session_path, "2"))
    if document.resume_command:
        out.append(style(f"resume: {document.resume_command}", "2"))
    for entry in document.messages:
        marked = entry.message_index == focus
        rule = f"{'▶ ' if marked else ''}#{entry.message_index} {entry.role}"
        when = local_time(entry.created_at)
        header = f"── {rule}{' · ' + when if when else ''} "
        header += "─" * max(3, 60 - len(header))
        out.append("")
        out.append(style(header, "1;7" if marked else ROLE_COLORS.get(entry.role, "1")))
        for part in entry.parts:
            if part.kind not in TOOL_KINDS:
                out.append(part.text)
            elif not tools:
                out.append(style("  " + folded(part), "31" if part.kind == "tool_error" else "2"))
            else:
                out.append(style(f"  {MARKS[part.kind]} {part.tool_name or 'tool'}", "2"))
                out.extend("    " + line for line in body(part).splitlines())
    return "\n".join(out) + "\n"


# -- markdown --------------------------------------------------------------------------


def fence(content: str, info: str = "") -> str:
    """A fenced block longer than any backtick run inside ``content``."""
    longest = max((len(m) for m in re.findall(r"`+", content)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{content}\n{ticks}"


def _md_escape_line(line: str) -> str:
    return line.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def markdown(document: SessionDocument, *, tools: bool = True, focus: int | None = None) -> str:
    """A Markdown document: a header list, then a section per message. Agents write
    Markdown, so their text is kept as is; tool text goes in fenced blocks."""
    title = document.title or document.session_id
    lines = [f"# {_md_escape_line(collapse_whitespace(title))}", ""]
    lines.append(f"- **Agent:** {agent_label(document.agent)}")
    if document.project:
        lines.append(f"- **Project:** `{document.project}`")
    if span(document):
        lines.append(f"- **Dates:** {span(document)}")
    lines.append(f"- **Messages:** {document.message_count}")
    lines.append(f"- **Session:** `{document.session_id}`")
    lines.append(f"- **Transcript:** `{document.session_path}`")
    if document.resume_command:
        lines.append(f"- **Resume:** `{document.resume_command}`")
    if document.redacted:
        lines.append("- Likely secrets were replaced by `[redacted]`.")
    for entry in document.messages:
        when = local_time(entry.created_at)
        marked = " ◀" if entry.message_index == focus else ""
        role = ROLE_NAMES.get(entry.role, entry.role.capitalize())
        lines += ["", f"## #{entry.message_index} · {role}{' · ' + when if when else ''}{marked}"]
        for part in entry.parts:
            lines.append("")
            if part.kind not in TOOL_KINDS:
                lines.append(part.text)
            elif not tools:
                lines.append("`" + folded(part).replace("`", "'") + "`")
            else:
                what = {"tool_input": "Tool call", "tool_output": "Result", "tool_error": "Error"}
                lines.append(f"**{what[part.kind]}** `{part.tool_name or 'tool'}`")
                lines.append("")
                lines.append(fence(body(part)))
    return "\n".join(lines) + "\n"


# -- json --------------------------------------------------------------------------------


def json_text(document: SessionDocument) -> str:
    return encode(document).decode("utf-8") + "\n"
