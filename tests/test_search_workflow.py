"""Finding things the way people look for them (SPEC L12, L13, L14), through the real CLI.

Three agents' sessions on disk (native logs, Claude Code, Codex) in several projects
and at known times; every assertion reads ``convodex search --json`` or its text.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    CliRun,
    append_lines,
    as_json,
    write_claude_session,
    write_codex_rollout,
    write_session,
)

DAY = 86_400_000
# Sessions happen on these days (local midnight + hours), newest last.
BASE = int(datetime(2026, 10, 1).timestamp() * 1000)
PROJECTS = ["/srv/alpha", "/srv/beta", "/home/dev/gamma"]
# Every behaviour here holds with no accelerator and with all of them (conftest).
pytestmark = pytest.mark.usefixtures("accelerators")


def native(root: Path, n: int, words: str, project: str, at: int, **meta: Any) -> Path:
    messages = [
        {"role": "user", "content": f"session {n}: {words}", "createdAt": at},
        {"role": "assistant", "content": f"answer {n} about {words}", "createdAt": at + 60_000},
    ]
    return write_session(root, f"native{n:02}", messages, {"workspace_root": project, **meta})


@pytest.fixture
def corpus(tmp_path: Path) -> dict[str, Path]:
    """30 native sessions (10 per project, a day apart), 2 Claude Code, 2 Codex."""
    roots = {name: tmp_path / name for name in ("native", "claude", "codex")}
    for n in range(30):
        native(roots["native"], n, "common rollback plan", PROJECTS[n % 3], BASE + n * DAY)
    for n in range(2):
        at = BASE + (40 + n) * DAY
        write_claude_session(
            roots["claude"],
            f"claude{n}",
            "/srv/alpha",
            [("user", "common words from claude", at), ("assistant", "plan rollback", at + 1)],
        )
        later = at + DAY // 2
        write_codex_rollout(
            roots["codex"],
            f"codex{n}",
            "/srv/beta",
            [("user", "common words from codex 数据库迁移", later), ("assistant", "ok", later + 1)],
        )
    return roots


def index(cli: CliRun, corpus: dict[str, Path]) -> None:
    args = ["index", "--json"]
    args += ["--root", str(corpus["native"])]
    args += ["--root", f"{corpus['claude']}:claude-code"]
    args += ["--root", f"{corpus['codex']}:codex"]
    as_json(cli(*args))


def search(cli: CliRun, *args: str) -> dict[str, Any]:
    result: dict[str, Any] = as_json(cli("search", *args, "--json"))
    return result


def walk(cli: CliRun, *args: str, limit: int = 7) -> list[dict[str, Any]]:
    """Every hit of a search, page by page; every page but the last is full."""
    hits: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        extra = ["--cursor", cursor] if cursor else []
        page = search(cli, *args, "--limit", str(limit), *extra)
        hits.extend(page["hits"])
        cursor = page["nextCursor"]
        if cursor is None:
            return hits
        assert len(page["hits"]) == limit, "a page before the last one is short"


def sessions(hits: list[dict[str, Any]]) -> set[str]:
    return {h["sessionId"] for h in hits}


def test_a_filter_that_removes_most_matches_still_fills_every_page(
    cli: CliRun, corpus: dict[str, Path]
) -> None:
    index(cli, corpus)
    for sort in ("relevance", "newest", "oldest"):
        hits = walk(cli, "common", "--project", "gamma", "--sort", sort, "--kind", "user_text")
        assert sessions(hits) == {f"native{n:02}" for n in range(2, 30, 3)}, sort
        assert {h["project"] for h in hits} == {"/home/dev/gamma"}


def test_a_cursor_walk_reaches_every_session_in_every_order(
    cli: CliRun, corpus: dict[str, Path]
) -> None:
    index(cli, corpus)
    every = {f"native{n:02}" for n in range(30)} | {"claude0", "claude1", "codex0", "codex1"}
    for sort in ("relevance", "newest", "oldest"):
        hits = walk(cli, "common", "--sort", sort, "--kind", "user_text", limit=5)
        assert sessions(hits) == every, sort
        assert len(hits) == len(every)
        refs = [h["ref"] for h in hits]
        assert len(set(refs)) == len(refs), "a hit came twice"


def test_newest_and_oldest_follow_the_files_own_timestamps(
    cli: CliRun, corpus: dict[str, Path]
) -> None:
    index(cli, corpus)
    newest = walk(cli, "common", "--sort", "newest", "--kind", "user_text")
    times = [h["messageAt"] for h in newest]
    assert times == sorted(times, reverse=True)
    assert newest[0]["sessionId"] == "codex1"
    # The times are the ones written in the transcripts.
    assert {h["messageAt"] for h in newest if h["sessionId"] == "native05"} == {BASE + 5 * DAY}
    oldest = walk(cli, "common", "--sort", "oldest", "--kind", "user_text")
    assert [h["ref"] for h in oldest] == [h["ref"] for h in reversed(newest)]


def test_agent_filter_narrows_to_that_agent(cli: CliRun, corpus: dict[str, Path]) -> None:
    index(cli, corpus)
    assert sessions(search(cli, "common", "--agent", "claude-code")["hits"]) == {
        "claude0",
        "claude1",
    }
    assert sessions(search(cli, "common agent:codex")["hits"]) == {"codex0", "codex1"}
    both = search(cli, "common", "--agent", "codex", "--agent", "claude_code")["hits"]
    assert {h["agent"] for h in both} == {"codex", "claude-code"}


def test_phrases_words_and_exclusion(cli: CliRun, corpus: dict[str, Path]) -> None:
    index(cli, corpus)
    words = search(cli, "rollback plan", "--limit", "200")["hits"]
    phrase = search(cli, '"rollback plan"', "--limit", "200")["hits"]
    # Claude's "plan rollback" has both words, but not the phrase.
    assert {"claude0", "claude1"} <= sessions(words)
    assert not {"claude0", "claude1"} & sessions(phrase)
    # A query that starts with "-" is a query, not an option.
    excluded = search(cli, "-claude", "common", "--kind", "user_text", "--limit", "200")["hits"]
    assert "claude0" not in sessions(excluded) and "native00" in sessions(excluded)
    either = search(cli, "claude OR codex", "--kind", "user_text")["hits"]
    assert sessions(either) == {"claude0", "claude1", "codex0", "codex1"}


def test_cjk_phrases(cli: CliRun, corpus: dict[str, Path]) -> None:
    index(cli, corpus)
    assert sessions(search(cli, "迁移")["hits"]) == {"codex0", "codex1"}
    assert sessions(search(cli, '"数据库迁移"')["hits"]) == {"codex0", "codex1"}
    assert search(cli, '"库数"')["hits"] == []


def test_relative_and_absolute_dates(cli: CliRun, corpus: dict[str, Path]) -> None:
    index(cli, corpus)
    day = datetime.fromtimestamp((BASE + 10 * DAY) / 1000).date().isoformat()
    on_day = search(cli, "common", "--since", day, "--until", day, "--kind", "user_text")
    assert sessions(on_day["hits"]) == {"native10"}
    inline = search(cli, f"common since:{day} until:{day}", "--kind", "user_text")
    assert sessions(inline["hits"]) == {"native10"}
    # Relative: everything is far in the past from today (2026-12-01 and on).
    assert search(cli, "common", "--since", "1d")["hits"] == []
    assert len(search(cli, "common", "--since", "1y", "--limit", "200")["hits"]) > 30


def test_a_cursor_with_other_filters_is_a_clear_error(cli: CliRun, corpus: dict[str, Path]) -> None:
    index(cli, corpus)
    first = search(cli, "common", "--limit", "3")
    result = cli(
        "search", "common", "--limit", "3", "--agent", "codex", "--cursor", first["nextCursor"]
    )
    assert result.exit_code == 1
    assert "cursor belongs to a different query" in result.output


def test_bad_qualifiers_and_dates_are_one_line(cli: CliRun, corpus: dict[str, Path]) -> None:
    index(cli, corpus)
    for args, message in [
        (["colour:red"], "unknown qualifier 'colour:'"),
        (["common", "--since", "last week"], "bad date in since"),
        (['"unclosed'], "unclosed quote"),
        (["-common"], "only negative terms"),
        (["common", "--agent", "nobody"], "unknown agent"),
    ]:
        result = cli("search", *args)
        assert result.exit_code == 1, args
        assert result.output.strip().splitlines() == [f"error: {result.output.strip()[7:]}"]
        assert message in result.output


def test_titles_fall_back_to_the_first_user_message(cli: CliRun, tmp_path: Path) -> None:
    root = tmp_path / "titles"
    long = "Please figure out why the nightly backup job keeps failing on the replica " * 2
    write_session(root, "untitled", [{"role": "user", "content": long}])
    write_session(root, "named", [{"role": "user", "content": "backup"}], {"name": "Backups"})
    as_json(cli("index", "--root", str(root), "--json"))
    titles = {h["sessionId"]: h["sessionTitle"] for h in search(cli, "backup")["hits"]}
    assert titles["named"] == "Backups"
    assert titles["untitled"].startswith("Please figure out why the nightly backup")
    assert titles["untitled"].endswith("…") and len(titles["untitled"]) == 81


def test_subagent_sessions_are_left_out_but_announced(cli: CliRun, tmp_path: Path) -> None:
    root = tmp_path / "sub"
    write_session(root, "main", [{"role": "user", "content": "parent talk"}])
    write_session(root, "helper", [{"role": "user", "content": "zeppelin"}], subdir="subagents")
    as_json(cli("index", "--root", str(root), "--json"))
    page = search(cli, "zeppelin")
    assert page["hits"] == [] and page["subagentHits"] is True
    assert search(cli, "parent")["subagentHits"] is False
    text = cli("search", "zeppelin").output
    assert "--include-subagents" in text
    assert len(search(cli, "zeppelin", "--include-subagents")["hits"]) == 1


def test_text_output_groups_marks_and_ends_with_counts(
    cli: CliRun, corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    index(cli, corpus)
    monkeypatch.setenv("HOME", "/home/dev")
    out = cli("search", "common", "--project", "gamma", "--limit", "4", "--color", "never").output
    lines = out.splitlines()
    assert lines[0].startswith("session ") and " · session-log · ~/gamma · 2026-" in lines[0]
    assert lines[1].startswith("  #0 user_text: session")
    # Grouped by session (L19): 4 sessions, counting every matching part of them.
    assert lines[-1].startswith("8 hits in 4 sessions") and " · more: --page 2" in lines[-1]
    assert "\x1b[" not in out
    colored = cli("search", "common", "--limit", "1", "--color", "always").output
    assert "\x1b[33m\x1b[1mcommon\x1b[0m" in colored
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in cli("search", "common", "--color", "auto").output
    json.loads(cli("search", "common", "--json").output)  # --json is never coloured


def test_messages_without_a_time_take_their_sessions_activity(cli: CliRun, tmp_path: Path) -> None:
    root = tmp_path / "untimed"
    older = write_session(root, "older", [{"role": "user", "content": "kestrel sighting"}])
    newer = write_session(root, "newer", [{"role": "user", "content": "kestrel again"}])
    os.utime(older, (1_700_000_000, 1_700_000_000))
    os.utime(newer, (1_750_000_000, 1_750_000_000))
    as_json(cli("index", "--root", str(root), "--json"))
    hits = search(cli, "kestrel", "--sort", "newest")["hits"]
    assert [h["sessionId"] for h in hits] == ["newer", "older"]
    assert [h["messageAt"] for h in hits] == [None, None]  # no time of their own
    # Only the newer one falls in a window around its file's time.
    assert sessions(search(cli, "kestrel", "--since", "2025-01-01")["hits"]) == {"newer"}
    # An append with a time moves the session's activity, and its untimed message too.
    append_lines(
        older, [{"role": "user", "content": "kestrel late", "createdAt": 1_760_000_000_000}]
    )
    as_json(cli("index", "--root", str(root), "--json"))
    hits = search(cli, "kestrel", "--sort", "newest", "--no-group")["hits"]
    assert [h["ref"] for h in hits] == ["older#0", "older#1", "newer#0"]
