"""``convodex show`` and ``export`` on real fixture sessions of every format (SPEC L15).

Each format's richest fixture session is shown and exported through the real CLI and
checked against what its reader replays: every user and assistant text in full, one
folded line per tool call or result (``--tools`` unfolds them), the effective branch
only: a rewound or abandoned branch never appears.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from convodex.catalog.service import HistoryService
from convodex.sessions.page import markdown_html, pretty
from convodex.sources.discover import FORMATS
from convodex.text.agents import agent_label
from helpers import FIXTURES, CliRun, as_json, read_all, write_session, write_vscdb
from sources import test_goose, test_kiro, test_zed

DAG_LOG = [
    {"type": "message", "id": "m1", "msgs": [{"role": "user", "content": "plan the dag move"}]},
    {
        "type": "message",
        "id": "m2",
        "parent": "m1",
        "msgs": [{"role": "assistant", "content": "an abandoned dag reply"}],
    },
    {"type": "rewind", "head": "main", "parent": "m1", "at": 3},
    {
        "type": "message",
        "id": "m3",
        "parent": "m1",
        "msgs": [{"role": "assistant", "content": "the kept dag reply"}],
    },
]
NATIVE = [
    {"role": "user", "content": "why does go test fail?", "createdAt": 1767225600000},
    {
        "role": "assistant",
        "content": "Running it.",
        "tool_calls": [{"id": "c1", "name": "bash", "arguments": '{"cmd": "go test ./..."}'}],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "error: exit status 1"},
    {"role": "assistant", "content": "The build tag is missing."},
]
# (ref, text on the effective branch, text only on an abandoned branch)
BRANCHES = [
    ("claude-code-log-dag_compact_after_rewind", "Second attempt", "First attempt"),
    ("019f0000-0000-7000-8000-000000000004", "Active branch answer.", "Discarded branch answer."),
    ("chatgpt-fixture-conversation", "Final answer.", "Superseded answer."),
    ("legacy-dag", "the kept dag reply", "an abandoned dag reply"),
]


@pytest.fixture
def indexed(cli: CliRun, tmp_path: Path) -> list[str]:
    """The fixtures, plus a native session log and a legacy DAG log, indexed."""
    extra = tmp_path / "extra"
    write_session(extra, "native-go", NATIVE, {"name": "Go test failure"})
    (extra / "legacy-dag.jsonl").write_text("".join(json.dumps(r) + "\n" for r in DAG_LOG))
    # No public sample of the Cursor editor's database: the readers' tests build one.
    write_vscdb(extra / "Cursor" / "User" / "globalStorage" / "state.vscdb")
    # Goose's and Zed's samples are SQL: their readers' tests build the databases.
    for store in (extra / "goose", extra / "zed"):
        store.mkdir()
    test_goose.build_store(extra / "goose" / "sessions.db")
    test_zed.build_store(extra / "zed" / "threads.db")
    # Kiro's CLI names a session's log and its companion after the session.
    kiro = extra / "kiro"
    for placed in test_kiro.CLI.placed:
        (kiro / placed.where).parent.mkdir(parents=True, exist_ok=True)
        (kiro / placed.where).write_bytes(placed.sample.read_bytes())
    roots = [str(FIXTURES), str(extra)]
    as_json(cli("index", *(a for r in roots for a in ("--root", r)), "--json"))
    return roots


def richest_per_format(cache_dir: Path) -> dict[str, tuple[str, list[Any]]]:
    """For each agent: a ref (``path#index``) to its session with the most messages, and
    that session's messages as its reader replays them."""
    with HistoryService.open(cache_dir, []) as service:
        rows = service.tree().rows
    best: dict[str, tuple[tuple[bool, int], str, list[Any]]] = {}
    for row in rows:
        if row.health != "ok":
            continue
        sessions: dict[str | None, list[Any]] = {}
        for m in read_all(FORMATS[row.source_format], Path(row.session_path)):
            if m.documents:
                sessions.setdefault(m.session_id, []).append(m)
        for messages in sessions.values():
            # A main session first; a sub-agent's only where the sample has no other
            # (Kiro's public CLI recording is a sub-agent's session).
            rank = (not row.subagent, len(messages))
            if row.source_format not in best or rank > best[row.source_format][0]:
                ref = f"{row.session_path}#{messages[0].index}"
                best[row.source_format] = (rank, ref, messages)
    return {fmt: (ref, messages) for fmt, (_, ref, messages) in best.items()}


def test_show_and_export_every_format(indexed: list[str], cli: CliRun) -> None:
    picked = richest_per_format(Path(indexed[-1]).parent / "cache")
    assert set(FORMATS) <= set(picked), f"no fixture session for {set(FORMATS) - set(picked)}"
    for fmt, (ref, expected) in sorted(picked.items()):
        shown = as_json(cli("show", ref, "--format", "json"))
        assert (shown["sessionPath"], shown["agent"]) == (ref.rsplit("#", 1)[0], agent_label(fmt))
        assert [m["messageIndex"] for m in shown["messages"]] == [m.index for m in expected]
        assert shown["messageCount"] == len(expected)
        for got, want in zip(shown["messages"], expected, strict=True):
            assert got["role"] == want.role
            assert [(p["kind"], p["text"]) for p in got["parts"]] == [
                (d.kind, d.text) for d in want.documents
            ]

        said = [d.text for m in expected for d in m.documents if d.kind.endswith("_text")]
        tools = [d for m in expected for d in m.documents if d.kind.startswith("tool_")]
        text = cli("show", ref, "--color", "never").stdout
        folded = [line for line in text.splitlines() if line.startswith(("  → ", "  ← ", "  ✗ "))]
        assert len(folded) == len(tools), fmt  # one line per tool call or result
        unfolded = cli("show", ref, "--tools", "--color", "never").stdout
        markdown = cli("export", ref, "--format", "markdown").stdout
        page = cli("export", ref, "--format", "html").stdout
        for words in said:
            assert words in text and words in unfolded and words in markdown, fmt
            assert markdown_html(words) in page, fmt  # the agent's Markdown, rendered
        for doc in tools:
            body = doc.text.removeprefix(doc.tool_name or "").strip()
            first = body.splitlines()[0] if body.strip() else ""
            assert first in unfolded and first in markdown
            assert html.escape(pretty(body), quote=False) in page, fmt


def test_the_effective_branch_only(indexed: list[str], cli: CliRun) -> None:
    for ref, kept, abandoned in BRANCHES:
        for args in (
            ("show", ref, "--tools"),
            ("show", ref, "--format", "json"),
            ("export", ref, "--format", "markdown"),
            ("export", ref, "--format", "html"),
            ("export", ref, "--format", "json"),
        ):
            out = cli(*args)
            assert out.exit_code == 0, out.output
            assert kept in out.stdout and abandoned not in out.stdout, (ref, args)


def test_show_marks_the_ref_and_shows_it_in_context(indexed: list[str], cli: CliRun) -> None:
    ref = "native-go#2"
    out = cli("show", ref, "--around", "1", "--color", "never").stdout
    headers = [line for line in out.splitlines() if line.startswith("── ")]
    assert [h.split()[1:3] for h in headers] == [
        ["#1", "assistant"],
        ["▶", "#2"],
        ["#3", "assistant"],
    ]
    assert "why does go test fail?" not in out  # outside the window
    assert "  ✗ bash: error: exit status 1" in out  # a failed result, folded
    assert "Go test failure" in out.splitlines()[0]
    window = as_json(cli("show", ref, "--around", "0", "--format", "json"))
    assert [m["messageIndex"] for m in window["messages"]] == [2]
    marked = cli("show", ref, "--format", "markdown").stdout
    assert "## #2 · Tool" in marked and "◀" in marked.split("## #2")[1].splitlines()[0]

    for args, message in [
        (("show", "native-go", "--around", "2"), "--around needs a ref that names a message"),
        (("show", "native-go#99"), "message #99 is not in this session's effective branch"),
        (("show", "native-go#x"), "#N must be a message index"),
    ]:
        result = cli(*args)
        assert result.exit_code == 1 and message in result.stderr


def test_export_to_a_file_is_private_and_self_contained(
    indexed: list[str], cli: CliRun, tmp_path: Path
) -> None:
    target = tmp_path / "out" / "session.html"
    target.parent.mkdir()
    result = cli("export", "native-go", "--format", "html", "-o", str(target))
    assert result.exit_code == 0 and result.stdout == ""
    assert "exported 4 messages" in result.stderr
    assert target.stat().st_mode & 0o777 == 0o600
    page = target.read_text("utf-8")
    assert page.startswith("<!doctype html>") and "<style>" in page
    for external in ("<script", "<link", "src=", "@import", "url(", "http://", "https://"):
        assert external not in page
    assert "<title>Go test failure</title>" in page
    assert 'data-message-index="2"' in page and "error: exit status 1" in page


def test_a_path_ref_and_a_session_inside_a_file_of_many(indexed: list[str], cli: CliRun) -> None:
    path = FIXTURES / "claude-code" / "sessions-chronicle" / "claude_sessions"
    by_path = as_json(cli("show", str(path / "sample-session.jsonl"), "--format", "json"))
    assert by_path["sessionId"] == "abc123"  # the session its records name
    assert by_path["title"] and by_path["messages"]
    # A file the catalog has never seen is read directly.
    loose = FIXTURES / "pi" / "agent-sessions-small.jsonl"
    assert as_json(cli("show", str(loose), "--format", "json"))["agent"] == "pi"
    # A file of two sessions: its path alone is ambiguous, each session by id is not.
    edge = FIXTURES / "claude-code" / "claude-code-log-edge_cases.jsonl"
    result = cli("show", str(edge))
    assert result.exit_code == 1
    assert "ambiguous" in result.stderr and "edge_cases, todowrite_session" in result.stderr
    inside = as_json(cli("show", "todowrite_session", "--format", "json"))
    assert inside["sessionPath"] == str(edge) and inside["messages"]
    assert all(
        m["messageIndex"] not in {e["messageIndex"] for e in inside["messages"]}
        for m in as_json(cli("show", "edge_cases", "--format", "json"))["messages"]
    )
