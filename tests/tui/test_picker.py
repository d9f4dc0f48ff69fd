"""The picker (SPEC L16) in Textual's headless pilot, over a real catalog: type, see
grouped results, move, preview in context, filter by agent, and Enter resumes the
chosen session (the same code ``convodex pick`` runs, ending in a stub agent)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
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
from convodex.sources.roots import resolve_root
from convodex.tui.choices import Choices
from convodex.tui.picker import Outcome, Picker
from helpers import write_claude_session, write_codex_rollout
from stub_agents import recorded, stub_agents

T0 = 1_767_225_600_000
DEADLINE = 20.0


def corpus(tmp_path: Path) -> tuple[list[Path], Path]:
    """Two agents' sessions about one migration, in a workspace that exists."""
    workspace = tmp_path / "shop"
    workspace.mkdir()
    claude = tmp_path / "claude"
    codex = tmp_path / "codex"
    write_claude_session(
        claude,
        "c1aude00-0000-4000-8000-000000000001",
        str(workspace),
        [
            ("user", "the orders migration locks the table", T0),
            ("assistant", "Split the migration into batches of ten thousand rows.", T0 + 1000),
            ("user", "batches worked, thanks", T0 + 2000),
        ],
    )
    write_codex_rollout(
        codex,
        "c0dex000-0000-4000-8000-000000000002",
        str(workspace),
        [("user", "write the rollback for the orders migration", T0 + 5000)],
    )
    return [resolve_root(f"{claude}:claude-code"), resolve_root(f"{codex}:codex")], workspace


async def until(pilot: Pilot[Outcome], check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.02)


def shown(widget: Static) -> str:
    content = widget.content
    return content.plain if isinstance(content, Text) else str(content)


def test_type_move_preview_filter_and_resume(
    tmp_path: Path, catalog: Catalog, cache_dir: Path
) -> None:
    roots, workspace = corpus(tmp_path)
    Indexer(catalog).run(roots)
    service = HistoryService(catalog, roots, scope=roots)
    app = Picker(service, index=False, cwd=str(workspace))

    async def drive() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            results = app.query_one("#results", OptionList)
            await pilot.press(*"migration")
            await until(pilot, lambda: len(app.hits) == 3, "three hits")
            # Grouped per session: a header (title · agent · …) before each group's hits.
            headers = [
                str(results.get_option_at_index(i).prompt)
                for i in range(results.option_count)
                if results.get_option_at_index(i).disabled
            ]
            assert len(headers) == 2 and any("claude-code" in h for h in headers)
            assert any("codex" in h and "write the rollback" in h for h in headers)

            preview = app.query_one("#preview", Static)
            first = app.selected()
            assert first is not None
            await until(pilot, lambda: first.ref in shown(preview), "the first preview")

            await pilot.press("down", "down")  # the search box keeps the keys meanwhile
            assert app.focused is app.query_one("#query")
            second = app.selected()
            assert second is not None and second is not first
            await until(pilot, lambda: second.ref in shown(preview), "the second preview")
            context = shown(preview)
            assert f"#{second.message_index} {second.role}" in context
            if second.agent == "claude-code":
                assert "batches worked, thanks" in context  # the hit in its context

            await pilot.press("ctrl+t")  # the agents, as a list: the first is claude-code
            await until(pilot, lambda: isinstance(app.screen, Choices), "the agents")
            await pilot.press("down", "enter")
            await until(
                pilot,
                lambda: bool(app.hits) and {h.agent for h in app.hits.values()} == {"claude-code"},
                "the agent filter",
            )
            assert "agent: claude-code" in shown(app.query_one("#status", Static))
            chosen = app.selected()
            assert chosen is not None
            await pilot.press("enter")
        outcome = app.return_value
        assert outcome is not None and outcome.action == "resume"
        assert outcome.hit is chosen

    asyncio.run(drive())
    app.close()
    catalog.close()
    assert app.return_value is not None and app.return_value.hit is not None
    ref = app.return_value.hit.ref

    # What `convodex pick` does with it once the terminal is back: resume, by exec.
    env, record = stub_agents(tmp_path, "claude")
    code = (
        "import sys; from pathlib import Path;"
        "from convodex.catalog.service import HistoryService;"
        "from convodex.cli.pick import carry_out;"
        "service = HistoryService.open(Path(sys.argv[1]), []);"
        "carry_out(service, 'resume', sys.argv[2], Path(sys.argv[1]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(cache_dir), ref],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert recorded(record) == {
        "argv": ["--resume", "c1aude00-0000-4000-8000-000000000001"],
        "cwd": str(workspace),
    }


def test_escape_quits_with_nothing(tmp_path: Path, catalog: Catalog) -> None:
    roots, workspace = corpus(tmp_path)
    Indexer(catalog).run(roots)
    app = Picker(HistoryService(catalog, roots, scope=roots), "rollback", index=False)

    async def drive() -> None:
        async with app.run_test() as pilot:
            await until(pilot, lambda: len(app.hits) == 1, "the initial query's hit")
            await pilot.press("escape")

    asyncio.run(drive())
    app.close()
    assert app.return_value is not None
    assert (app.return_value.action, app.return_value.hit, app.return_value.copied) == (
        "quit",
        None,
        None,
    )


def test_typing_always_edits_and_actions_return_to_the_picker(
    tmp_path: Path, catalog: Catalog
) -> None:
    """Letters are the query's, wherever the highlight is (before, ``e`` exported and
    quit, ``s`` showed and quit, ``/`` replaced the query); export and copy come back
    to the picker; a query that finds nothing leaves no stale preview."""
    roots, workspace = corpus(tmp_path)
    Indexer(catalog).run(roots)
    service = HistoryService(catalog, roots, scope=roots)
    exported: list[str] = []

    def export(ref: str) -> str:
        exported.append(ref)
        return f"exported {ref}"

    app = Picker(service, index=False, cwd=str(workspace), export=export)
    query = app.query_one

    async def drive() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.press(*"orders")
            await until(pilot, lambda: len(app.hits) == 2, "two hits")
            await pilot.press("down")
            await pilot.press(*" e/s")
            assert query("#query", Input).value == "orders e/s"
            assert app.is_running and app.return_value is None
            await pilot.press(*["backspace"] * 4)
            await until(pilot, lambda: len(app.hits) == 2, "the hits again")
            preview = query("#preview", Static)
            await until(pilot, lambda: shown(preview) != "", "a preview")

            await pilot.press("tab")  # what to do with the hit: a list
            await until(pilot, lambda: isinstance(app.screen, Choices), "the actions")
            await pilot.press("down", "down", "enter")  # resume, show, export
            await until(pilot, lambda: len(exported) == 1, "the export")
            await pilot.press("ctrl+x")
            await until(pilot, lambda: len(exported) == 2, "the second export")
            assert app.is_running and query("#query", Input).value == "orders"

            await pilot.press(*" zzzqqq")
            await until(pilot, lambda: not app.hits, "no hits")
            await until(pilot, lambda: shown(preview) == "", "the preview cleared")
            await pilot.press("escape")

    asyncio.run(drive())
    app.close()
    catalog.close()


def test_copy_comes_back_and_the_project_is_chosen_from_a_list(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-Y copies the hit's resume command through the desktop's clipboard tool and
    the picker stays; Ctrl-P lists the projects (any, this directory's, the hits') and
    the one chosen filters the hits."""
    roots, workspace = corpus(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_claude_session(
        tmp_path / "claude",
        "c1aude00-0000-4000-8000-000000000003",
        str(elsewhere),
        [("user", "the invoices migration needs a backfill", T0 + 9000)],
    )
    Indexer(catalog).run(roots)
    # A clipboard tool of the desktop's (pbcopy is tried without a display): it keeps
    # what it was given.
    tools = tmp_path / "bin"
    tools.mkdir()
    clipboard = tmp_path / "clipboard.txt"
    pbcopy = tools / "pbcopy"
    pbcopy.write_text(f"#!/bin/sh\ncat > {clipboard}\n", "utf-8")
    pbcopy.chmod(0o755)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ.get('PATH', '')}")
    service = HistoryService(catalog, roots, scope=roots)
    app = Picker(service, index=False, cwd=str(workspace))
    status = app.query_one

    async def drive() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.press(*"rollback")
            await until(pilot, lambda: len(app.hits) == 1, "the rollback hit")
            await pilot.press("ctrl+y")
            command = f"cd {workspace} && codex resume c0dex000-0000-4000-8000-000000000002"
            await until(
                pilot,
                lambda: clipboard.is_file() and clipboard.read_text("utf-8") == command,
                "the resume command on the clipboard",
            )
            assert app.is_running

            await pilot.press(*["backspace"] * 8, *"migration")
            await until(pilot, lambda: len({h.session_id for h in app.hits.values()}) == 3, "3")
            await pilot.press("ctrl+p")
            await until(pilot, lambda: isinstance(app.screen, Choices), "the projects")
            listed = app.screen.query_one(OptionList)
            prompts = [str(listed.get_option_at_index(i).prompt) for i in range(3)]
            assert prompts[0] == "any project" and prompts[1].startswith("this directory's")
            assert prompts[1].endswith("shop") and prompts[2].endswith("elsewhere")
            await pilot.press("down", "enter")  # this directory's
            await until(
                pilot,
                lambda: (
                    {h.session_id for h in app.hits.values()}
                    == {
                        "c1aude00-0000-4000-8000-000000000001",
                        "c0dex000-0000-4000-8000-000000000002",
                    }
                ),
                "this directory's hits only",
            )
            assert "project: shop" in shown(status("#status", Static))
            await pilot.press("escape")

    asyncio.run(drive())
    app.close()
    catalog.close()
    assert app.return_value is not None and app.return_value.copied is None
