"""More like this in the picker (SPEC L19): from a highlighted row, the actions list
"similar", and the sessions most like it replace the results, one row each, ready to
pick (by words here: the catalog holds no embeddings; by meaning, the same list)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import Input, OptionList, Static

from convodex.catalog.db import Catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.service import HistoryService
from convodex.sources.roots import resolve_root
from convodex.tui.choices import Choices
from convodex.tui.picker import Outcome, Picker
from helpers import write_claude_session
from tui.test_picker_recent import listed, shown, until

T0 = 1_767_225_600_000
MIGRATION = "a1000000-0000-4000-8000-000000000001"
ALIKE = "a1000000-0000-4000-8000-000000000002"
OTHER = "a1000000-0000-4000-8000-000000000003"


def test_similar_lists_the_sessions_like_the_highlighted_one(
    tmp_path: Path, catalog: Catalog
) -> None:
    root = tmp_path / "claude"
    sessions = {
        MIGRATION: "the orders migration holds a lock on the invoices table during backfill",
        ALIKE: "a backfill of the invoices table waits on the orders migration lock again",
        OTHER: "bake sourdough bread with a long cold proof overnight",
    }
    for n, (session, words) in enumerate(sessions.items()):
        write_claude_session(
            root, session, str(tmp_path), [("user", words, T0 + n), ("assistant", "noted", T0 + n)]
        )
    # Two more sessions so that the telling words are shared by some, not by all.
    for n in range(2):
        write_claude_session(
            root,
            f"b200000{n}-0000-4000-8000-000000000000",
            str(tmp_path),
            [("user", f"unrelated chat number {n} about gardening tomatoes", T0 + 10 + n)],
        )
    roots: list[Path] = [resolve_root(f"{root}:claude-code")]
    Indexer(catalog).run(roots)
    service = HistoryService(catalog, roots, scope=roots)
    app = Picker(service, index=False, cwd=str(tmp_path), print_only=True)

    async def drive() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            query = app.query_one("#query", Input)
            query.value = "holds"  # one session has it: the migration one
            status = app.query_one("#status", Static)
            await until(pilot, lambda: shown(status).startswith("1 hit in 1 session · "), "the hit")
            preview = app.query_one("#preview", Static)
            await until(pilot, lambda: "holds a lock" in shown(preview), "its preview")
            await pilot.press("tab")
            await until(pilot, lambda: isinstance(app.screen, Choices), "the actions")
            choices = app.screen
            assert isinstance(choices, Choices)
            actions = choices.query_one(OptionList)
            await until(pilot, lambda: actions.has_focus, "the actions to take the keys")

            def on_similar() -> bool:
                option = actions.highlighted_option
                return option is not None and option.id == "similar"

            for place in range(1, 5):  # the fifth action: similar (waits on each move)
                await pilot.press("down")
                await until(pilot, lambda: actions.highlighted == place, f"action {place}")  # noqa: B023
            assert on_similar()
            await pilot.press("enter")
            await until(pilot, lambda: "like it" in shown(status), f"similar: {shown(status)}")
            rows = listed(app)
            assert rows and rows[0].startswith("a backfill of the invoices table")
            assert not any(r.startswith("the orders migration holds") for r in rows)
            await pilot.press("enter")

    asyncio.run(drive())
    app.close()
    outcome = app.return_value
    assert isinstance(outcome, Outcome) and outcome.ref == ALIKE
