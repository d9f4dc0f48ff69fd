"""Output people can read (SPEC L14, L15; issue 24 item 13), through the real CLI.

HTML exports render Markdown and pretty-print tool JSON, show when they were made and
never overwrite a file unasked; snippets centre on the matched words in long tool
text; pages are reached by number; agents have one spelling and aliases; counts have
their plurals; a session without user text is titled by its id.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from helpers import CliRun, as_json, hits, write_claude_session, write_session

T0 = 1_767_225_600_000  # 2026-01-01T00:00Z
MARKDOWN = (
    "# Plan\n\nRun this:\n\n```python\nprint('hi')\n```\n\n"
    "| step | state |\n|---|---|\n| build | done |\n\n"
    "![remote](https://example.com/x.png) <script>alert(1)</script>"
)
NOISE = "\n".join(f"line {n}: nothing to see here at all" for n in range(40))
SESSION = [
    {"role": "user", "content": "write the deploy plan", "createdAt": T0},
    {
        "role": "assistant",
        "content": MARKDOWN,
        "createdAt": T0 + 1000,
        "tool_calls": [
            {"id": "c1", "name": "bash", "arguments": '{"cmd": "make deploy", "retries": 2}'}
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "bash",
        "content": f"error: the deploy broke\n{NOISE}\nwalrus timeout exceeded",
        "is_error": True,
        "createdAt": T0 + 2000,
    },
]


def indexed(root: Path, cli: CliRun) -> None:
    write_session(root, "plan", SESSION, {"name": "Deploy plan"})
    write_session(root, "quiet", [{"role": "assistant", "content": "quiet walrus here"}])
    as_json(cli("index", "--root", str(root), "--json"))


def test_html_export_renders_markdown_and_pretty_json(root: Path, cli: CliRun) -> None:
    indexed(root, cli)
    out = cli("export", "plan", "--format", "html")
    assert out.exit_code == 0, out.output
    page = out.stdout
    assert "<h1>Plan</h1>" in page and "<table>" in page and "<td>build</td>" in page
    assert re.search(r'<pre><code class="language-python">print\(.*hi.*\)', page)
    # Raw HTML stays text, and nothing external is loaded (no images from the net).
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<img" not in page and "https://example.com/x.png" not in page.split("<a ")[0]
    assert '{\n  "cmd": "make deploy",\n  "retries": 2\n}' in page


def test_html_footer_says_when_it_was_exported(root: Path, cli: CliRun) -> None:
    indexed(root, cli)
    page = cli("export", "plan", "--format", "html").stdout
    footer = page[page.index("<footer") :]
    stamp = re.search(r'datetime="([^"]+)"', footer)
    assert stamp is not None and "2026-01-01T" not in stamp.group(1)
    made = datetime.fromisoformat(stamp.group(1))
    assert abs((datetime.now(made.tzinfo) - made).total_seconds()) < 24 * 3600


def test_export_refuses_to_overwrite_without_force(root: Path, cli: CliRun, tmp_path: Path) -> None:
    indexed(root, cli)
    target = tmp_path / "plan.md"
    target.write_text("mine", "utf-8")
    refused = cli("export", "plan", "-o", str(target))
    assert (
        refused.exit_code == 1
        and "already exists" in refused.stderr
        and "--force" in refused.stderr
    )
    assert target.read_text("utf-8") == "mine"
    done = cli("export", "plan", "-o", str(target), "--force")
    assert done.exit_code == 0, done.output
    assert "write the deploy plan" in target.read_text("utf-8")


def test_snippets_centre_on_the_words_in_long_tool_text(root: Path, cli: CliRun) -> None:
    indexed(root, cli)
    found = hits(cli, "error timeout", "--kind", "tool_error")
    assert len(found) == 1
    assert "timeout" in found[0]["snippet"]


def test_search_pages_by_number(root: Path, cli: CliRun) -> None:
    for n in range(5):
        write_session(root, f"s{n}", [{"role": "user", "content": f"pelican number {n}"}])
    as_json(cli("index", "--root", str(root), "--json"))
    first = as_json(cli("search", "pelican", "--limit", "2", "--json"))
    second = as_json(cli("search", "pelican", "--limit", "2", "--page", "2", "--json"))
    third = as_json(cli("search", "pelican", "--limit", "2", "--page", "3", "--json"))
    refs = [h["ref"] for page in (first, second, third) for h in page["hits"]]
    assert len(refs) == 5 and len(set(refs)) == 5
    assert third["nextCursor"] is None
    text = cli("search", "pelican", "--limit", "2")
    assert "more: --page 2" in text.stdout.splitlines()[-1]


def test_agent_aliases_and_did_you_mean(tmp_path: Path, cli: CliRun) -> None:
    claude = tmp_path / "claude"
    write_claude_session(claude, "c1", "/w/app", [("user", "the heron plan", T0)])
    as_json(cli("index", "--root", f"{claude}:claude-code", "--json"))
    assert len(hits(cli, "heron", "--agent", "claude")) == 1
    assert len(hits(cli, "heron agent:claude")) == 1
    wrong = cli("search", "heron", "--agent", "claud-code")
    assert wrong.exit_code == 1 and "did you mean claude-code?" in wrong.stderr


def test_one_spelling_of_agent_names(tmp_path: Path, cli: CliRun) -> None:
    claude = tmp_path / "claude"
    write_claude_session(claude, "c1", "/w/app", [("user", "the heron plan", T0)])
    as_json(cli("index", "--root", f"{claude}:claude-code", "--json"))
    (hit,) = hits(cli, "heron")
    assert hit["agent"] == "claude-code"
    assert as_json(cli("show", "c1", "--format", "json"))["agent"] == "claude-code"
    exported = json.loads(cli("export", "c1", "--format", "json").stdout)
    assert exported["agent"] == "claude-code"
    assert "claude-code" in cli("search", "heron").stdout


def test_counts_have_their_plurals(root: Path, cli: CliRun) -> None:
    write_session(root, "one", [{"role": "user", "content": "a lone pelican, a lone pelican"}])
    out = cli("index", "--root", str(root))
    assert "1 sources" not in out.stdout and "1 source" in out.stdout
    assert "1 messages" not in out.stdout
    text = cli("search", "pelican").stdout
    assert "1 hit in 1 session" in text and "sessions" not in text.splitlines()[-1]


def test_session_title_is_never_null(root: Path, cli: CliRun) -> None:
    indexed(root, cli)
    (hit,) = hits(cli, "quiet walrus")
    assert hit["sessionTitle"] == "quiet"
