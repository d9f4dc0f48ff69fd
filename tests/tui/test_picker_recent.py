"""The picker with no words (issue 24, "the first ten minutes"): an empty query, or a
query of filters only, lists the recent sessions ``convodex recent`` lists (newest
first: title · agent · project · date), previews the highlighted one, and picking one
(Enter, show, export, ``--print``) works on its session ref though there is no hit."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Static

from convodex.catalog.db import Catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.service import HistoryService
from convodex.cli.pick import export_here
from convodex.sources.roots import resolve_root
from convodex.tui.choices import Choices
from convodex.tui.picker import Outcome, Picker
from helpers import CliRun, as_json, write_claude_session, write_codex_rollout
from tui.terminal import Terminal, convodex_command, picker_env

T0 = 1_767_225_600_000
DEADLINE = 20.0
CLAUDE = "c1aude00-0000-4000-8000-000000000001"
CODEX = "c0dex000-0000-4000-8000-000000000002"
OLDER = "c1aude00-0000-4000-8000-000000000003"


def write_history(tmp_path: Path) -> tuple[list[str], Path]:
    """Three sessions of two agents, at three different times; their ``--root``s."""
    workspace = tmp_path / "shop"
    workspace.mkdir()
    claude = tmp_path / "claude"
    codex = tmp_path / "codex"
    write_claude_session(
        claude,
        OLDER,
        str(workspace),
        [("user", "rename the invoices table", T0), ("assistant", "Done: renamed.", T0 + 1)],
    )
    write_claude_session(
        claude,
        CLAUDE,
        str(workspace),
        [
            ("user", "the orders migration locks the table", T0 + 86_400_000),
            ("assistant", "Split the migration into batches.", T0 + 86_401_000),
        ],
    )
    write_codex_rollout(
        codex,
        CODEX,
        str(workspace),
        [("user", "write the rollback for the orders migration", T0 + 2 * 86_400_000)],
    )
    return [f"{claude}:claude-code", f"{codex}:codex"], workspace


async def until(pilot: Pilot[Outcome], check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.02)


def shown(widget: Static) -> str:
    content = widget.content
    return content.plain if isinstance(content, Text) else str(content)


def listed(app: Picker) -> list[str]:
    results = app.query_one("#results", OptionList)
    return [str(results.get_option_at_index(i).prompt) for i in range(results.option_count)]


def test_no_words_list_the_recent_sessions_to_pick_from(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts, workspace = write_history(tmp_path)
    roots: list[Path] = [resolve_root(text) for text in texts]
    Indexer(catalog).run(roots)
    service = HistoryService(catalog, roots, scope=roots)
    monkeypatch.chdir(tmp_path)
    app = Picker(
        service,
        index=False,
        cwd=str(workspace),
        print_only=True,
        export=lambda ref: export_here(service, ref),
    )

    async def drive() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await until(pilot, lambda: len(listed(app)) == 3, "the recent sessions")
            rows = listed(app)
            # Newest first, a row each: title · agent · project · date.
            assert rows[0].startswith("write the rollback for the orders migration · codex · ")
            assert rows[1].startswith("the orders migration locks the table · claude-code · ")
            assert rows[2].startswith("rename the invoices table · claude-code · ")
            assert all(str(workspace.name) in row and "2026-01-0" in row for row in rows)
            status = app.query_one("#status", Static)
            assert shown(status).startswith("3 recent sessions · ")
            preview = app.query_one("#preview", Static)
            await until(pilot, lambda: CODEX in shown(preview), "the first session's preview")
            assert "write the rollback for the orders migration" in shown(preview)

            await pilot.press("down")  # the second session: its preview, its messages
            await until(pilot, lambda: CLAUDE in shown(preview), "the second preview")
            context = shown(preview)
            assert "claude --resume" in context
            assert "#0 user" in context and "Split the migration into batches" in context

            await pilot.press("ctrl+x")  # export works on the session's ref
            exported = tmp_path / f"{CLAUDE}.md"
            await until(pilot, exported.exists, "the export")
            assert "Split the migration into batches" in exported.read_text("utf-8")

            # Filters only: that agent's recent sessions.
            query = app.query_one("#query", Input)
            query.value = "agent:claude-code"
            await until(pilot, lambda: len(listed(app)) == 2, "claude-code's sessions")
            assert all(" · claude-code · " in row for row in listed(app))
            await pilot.press("down")
            await until(pilot, lambda: OLDER in shown(preview), "the older session's preview")

            await pilot.press("tab")  # what to do with it: about the session
            await until(pilot, lambda: isinstance(app.screen, Choices), "the actions")
            await pilot.press("escape")
            await pilot.press("enter")

    asyncio.run(drive())
    app.close()
    outcome = app.return_value
    assert outcome is not None
    assert (outcome.action, outcome.hit, outcome.ref) == ("print", None, OLDER)


def test_print_a_recent_session_in_a_real_terminal(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    """``convodex pick --print`` with nothing typed: the recent sessions at once, and
    Enter prints the highlighted one's ref."""
    texts, workspace = write_history(tmp_path)
    roots = [arg for text in texts for arg in ("--root", text)]
    as_json(cli("index", *roots, "--json"))
    out = tmp_path / "picked.txt"
    args = ["pick", "--print", "--no-index", *roots, "--cache-dir", str(cache_dir)]
    command = convodex_command(picker_env(), args)
    terminal.start(f"{command} > {out}; echo picker-exit=$?; sleep 60")
    screen = terminal.ready()
    screen = terminal.wait_for("3 recent sessions", "the recent sessions")
    assert "write the rollback for the orders migration · codex" in screen
    terminal.wait_for("codex resume", "the first session's preview")
    terminal.keys("Down")
    terminal.wait_for("claude --resume", "the second session's preview")
    terminal.keys("Enter")
    terminal.wait_for("picker-exit=0", "the picker to quit")
    assert out.read_text("utf-8") == f"{CLAUDE}\n"
