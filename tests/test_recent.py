"""Browsing without words (SPEC L17): ``convodex recent`` and queries of qualifiers only.

Through the real CLI: sessions newest first with title, agent, project, last activity
and ref; every filter; keyset paging; ``search agent:codex`` and ``search --agent codex``
mean the same as ``recent --agent codex``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from helpers import CliRun, as_json, write_claude_session, write_codex_rollout, write_session

HOUR = 3_600_000


@pytest.fixture
def history(tmp_path: Path, cli: CliRun) -> list[str]:
    """Three Claude Code sessions and two Codex sessions at known times, indexed."""
    now = int(time.time() * 1000)
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    write_claude_session(claude, "c-old", "/w/app", [("user", "fix the parser", now - 90 * HOUR)])
    write_claude_session(claude, "c-mid", "/w/app", [("user", "rename a column", now - 5 * HOUR)])
    write_claude_session(claude, "c-new", "/w/site", [("user", "tune the css", now - 1 * HOUR)])
    write_codex_rollout(codex, "x-old", "/w/app", [("user", "port the tests", now - 50 * HOUR)])
    write_codex_rollout(codex, "x-new", "/w/api", [("user", "add an endpoint", now - 2 * HOUR)])
    roots = [f"{claude}:claude-code", f"{codex}:codex"]
    cli("index", *(a for r in roots for a in ("--root", r)))
    return roots


def ids(out: dict[str, Any]) -> list[str]:
    return [s["sessionId"] for s in out["sessions"]]


def test_recent_lists_sessions_newest_first_with_their_facts(
    history: list[str], cli: CliRun
) -> None:
    out = as_json(cli("recent", "--json"))
    assert ids(out) == ["c-new", "x-new", "c-mid", "x-old", "c-old"]
    first = out["sessions"][0]
    assert first["sessionTitle"] == "tune the css"
    assert first["agent"] == "claude-code"
    assert first["project"] == "/w/site"
    assert first["ref"] == "c-new"
    assert isinstance(first["lastActivityAt"], int)
    assert out["progress"]["state"] == "complete"


def test_recent_text_is_one_line_a_session(history: list[str], cli: CliRun) -> None:
    out = cli("recent", "--limit", "2")
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert "tune the css" in lines[0] and "claude-code" in lines[0] and "c-new" in lines[0]
    assert "add an endpoint" in lines[1] and "codex" in lines[1]
    assert "2 sessions" in lines[-1] and "--page 2" in lines[-1]


def test_recent_filters(history: list[str], cli: CliRun) -> None:
    assert ids(as_json(cli("recent", "--agent", "codex", "--json"))) == ["x-new", "x-old"]
    assert ids(as_json(cli("recent", "--project", "app", "--json"))) == [
        "c-mid",
        "x-old",
        "c-old",
    ]
    assert ids(as_json(cli("recent", "--since", "1d", "--json"))) == ["c-new", "x-new", "c-mid"]
    assert ids(as_json(cli("recent", "--until", "1d", "--json"))) == ["x-old", "c-old"]
    assert ids(as_json(cli("recent", "--session", "c-mid", "--json"))) == ["c-mid"]
    # Inline qualifiers mean the same as the options.
    assert ids(as_json(cli("recent", "agent:codex since:1d", "--json"))) == ["x-new"]


def test_recent_pages_by_cursor_and_by_number(history: list[str], cli: CliRun) -> None:
    seen: list[str] = []
    cursor: str | None = None
    while True:
        extra = ("--cursor", cursor) if cursor else ()
        out = as_json(cli("recent", "--limit", "2", "--json", *extra))
        seen += ids(out)
        cursor = out["nextCursor"]
        if cursor is None:
            break
    assert seen == ["c-new", "x-new", "c-mid", "x-old", "c-old"]
    assert ids(as_json(cli("recent", "--limit", "2", "--page", "3", "--json"))) == ["c-old"]
    other = as_json(cli("recent", "--limit", "2", "--json"))["nextCursor"]
    bad = cli("recent", "--agent", "codex", "--cursor", other)
    assert bad.exit_code == 1 and "cursor belongs to a different" in bad.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("search", "agent:codex"),
        ("search", "--agent", "codex"),
        ("search", "agent:codex", "since:yesterday"),
    ],
)
def test_a_query_of_qualifiers_only_browses(
    history: list[str], cli: CliRun, args: tuple[str, ...]
) -> None:
    out = as_json(cli(*args, "--json"))
    assert out["hits"] == []
    assert ids({"sessions": out["sessions"]})[0] == "x-new"
    text = cli(*args)
    assert text.exit_code == 0, text.output
    assert "add an endpoint" in text.stdout and text.stderr == ""


def test_a_query_of_no_words_and_no_qualifiers_is_still_an_error(cli: CliRun) -> None:
    out = cli("search", "?? !!")
    assert out.exit_code == 1 and "at least one letter or number" in out.stderr


def test_a_session_without_user_text_is_listed_by_its_id(root: Path, cli: CliRun) -> None:
    write_session(root, "quiet", [{"role": "assistant", "content": "hello"}])
    cli("index", "--root", str(root))
    out = as_json(cli("recent", "--json"))
    assert [s["sessionTitle"] for s in out["sessions"]] == ["quiet"]
