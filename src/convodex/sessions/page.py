"""A session as one self-contained HTML page (SPEC L15 ``export --format html``).

Agents write Markdown: it is rendered (markdown-it-py, CommonMark with tables and
strikethrough), with raw HTML kept as text and images left out (a page that loads
nothing from anywhere, and shows nothing a transcript did not say in words; an image
becomes its link). Tool calls and results that are JSON are pretty-printed. Inline CSS,
no script, no external asset, readable offline and printable.
"""

from __future__ import annotations

import functools
import html as html_lib
import json
from datetime import datetime
from typing import TYPE_CHECKING

from convodex.models import SessionDocument, SessionEntry
from convodex.sessions.render import (
    ROLE_NAMES,
    TOOL_KINDS,
    agent_label,
    body,
    iso_time,
    local_time,
    span,
)
from convodex.text.snippet import collapse_whitespace

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

# JSON this large is shown as it came (pretty-printing it would only make it longer).
PRETTY_MAX = 256 * 1024


@functools.cache
def _markdown() -> MarkdownIt:
    """CommonMark with tables and strikethrough; raw HTML escaped, images out."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")
    return md


def markdown_html(text: str) -> str:
    """An agent's Markdown as HTML: safe (raw HTML and unsafe links stay text)."""
    rendered: str = _markdown().render(text)
    return rendered.strip()


def pretty(text: str) -> str:
    """A tool part's JSON indented by two, else the text as it is."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or len(stripped) > PRETTY_MAX:
        return text
    try:
        value = json.loads(stripped)
    except ValueError:
        return text
    return json.dumps(value, indent=2, ensure_ascii=False)


CSS = """
:root { color-scheme: light dark; --fg: #1d1f21; --bg: #fff; --muted: #5f6368;
  --line: #dadce0; --user: #e8f0fe; --assistant: #f1f3f4; --tool: #fef7e0; --error: #fce8e6; }
@media (prefers-color-scheme: dark) { :root { --fg: #e8eaed; --bg: #202124; --muted: #9aa0a6;
  --line: #3c4043; --user: #1e2a3b; --assistant: #2a2b2e; --tool: #332b16; --error: #3b1f1c; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 60rem; padding: 2rem 1.25rem 4rem; color: var(--fg);
  background: var(--bg); font: 15px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; }
header h1 { font-size: 1.5rem; margin: 0 0 .75rem; overflow-wrap: anywhere; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0;
  color: var(--muted); font-size: .9rem; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
code, pre { font: 13px/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
article.msg { margin: 1.25rem 0; padding: .75rem 1rem; border: 1px solid var(--line);
  border-radius: 8px; background: var(--assistant); break-inside: avoid-page; }
article.msg.user { background: var(--user); }
article.msg.tool { background: var(--tool); }
article.msg.focus { outline: 3px solid #f9ab00; }
article.msg h2 { font-size: .85rem; margin: 0 0 .5rem; color: var(--muted); font-weight: 600; }
.text { overflow-wrap: anywhere; } .text > :first-child { margin-top: 0; }
.text > :last-child { margin-bottom: 0; }
.text pre { padding: .6rem .8rem; border-radius: 6px; background: rgba(127,127,127,.12);
  overflow-x: auto; white-space: pre; }
.text table { border-collapse: collapse; margin: .5rem 0; }
.text th, .text td { border: 1px solid var(--line); padding: .25rem .6rem; text-align: left; }
.text blockquote { margin: .5rem 0; padding-left: .8rem; border-left: 3px solid var(--line);
  color: var(--muted); }
details.tool { margin: .5rem 0; border-left: 3px solid var(--line); padding-left: .75rem; }
details.tool.tool_error { border-left-color: #d93025; background: var(--error); }
details.tool summary { cursor: pointer; color: var(--muted); font-size: .85rem; }
details.tool pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .4rem 0 0; }
footer { margin-top: 2rem; color: var(--muted); font-size: .8rem; }
@media print { body { max-width: none; padding: 0; } article.msg { border-color: #999; }
  details.tool > summary { list-style: none; } }
"""


def html(
    document: SessionDocument, *, focus: int | None = None, now: datetime | None = None
) -> str:
    """One self-contained HTML page of the session (inline CSS, nothing external);
    its footer says when it was made (``now``, the clock's by default)."""
    esc = html_lib.escape
    title = collapse_whitespace(document.title or document.session_id)
    rows = [("Agent", agent_label(document.agent))]
    if document.project:
        rows.append(("Project", document.project))
    if span(document):
        rows.append(("Dates", span(document)))
    rows += [("Messages", str(document.message_count)), ("Session", document.session_id)]
    rows.append(("Transcript", document.session_path))
    if document.resume_command:
        rows.append(("Resume", document.resume_command))
    if document.redacted:
        rows.append(("Redacted", "likely secrets were replaced by [redacted]"))
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="convodex">',
        f"<title>{esc(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f'<header><h1 id="title">{esc(title)}</h1><dl class="facts">',
    ]
    out += [f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows]
    out.append("</dl></header><main>")
    out += [_html_entry(entry, entry.message_index == focus) for entry in document.messages]
    made = (now or datetime.now()).astimezone()
    stamp = made.isoformat(timespec="seconds")
    shown = made.strftime("%Y-%m-%d %H:%M")
    out.append(
        f'</main><footer>Exported by convodex · <time datetime="{esc(stamp)}">'
        f"{esc(shown)}</time></footer>"
    )
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _html_entry(entry: SessionEntry, focus: bool) -> str:
    esc = html_lib.escape
    role = ROLE_NAMES.get(entry.role, entry.role.capitalize())
    classes = f"msg {esc(entry.role)}" + (" focus" if focus else "")
    when = ""
    if entry.created_at is not None:
        stamp, shown = esc(iso_time(entry.created_at)), esc(local_time(entry.created_at))
        when = f' · <time datetime="{stamp}">{shown}</time>'
    out = [
        f'<article class="{classes}" id="m{entry.message_index}" '
        f'data-message-index="{entry.message_index}">',
        f"<h2>{esc(role)} · #{entry.message_index}{when}</h2>",
    ]
    what = {"tool_input": "Tool call", "tool_output": "Result", "tool_error": "Error"}
    for part in entry.parts:
        if part.kind not in TOOL_KINDS:
            out.append(f'<div class="text">{markdown_html(part.text)}</div>')
            continue
        name = esc(part.tool_name or "tool")
        out.append(
            f'<details class="tool {part.kind}" open><summary>{what[part.kind]} · {name}</summary>'
            f"<pre>{html_lib.escape(pretty(body(part)), quote=False)}</pre></details>"
        )
    out.append("</article>")
    return "\n".join(out)
