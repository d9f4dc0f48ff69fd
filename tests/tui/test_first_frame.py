"""The picker's first frame (drawn before Textual loads) against the Textual app's own
first screen, in Textual's headless pilot over a real catalog: for each terminal size
and query, every row the first frame draws is the row the app draws, so nothing moves
when the app takes the screen over (SPEC L16). Only the app's footer is missing from
the first frame (the app's first frame has none yet either)."""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest
from textual.widgets import Static

from convodex.catalog.db import Catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.service import HistoryService
from convodex.models import SearchPage
from convodex.sources.roots import resolve_root
from convodex.tui.first_frame import Frame
from convodex.tui.picker import Picker
from convodex.tui.state import Filters, FirstLook, first_look, first_page, search_thread
from helpers import write_claude_session

T0 = 1_767_225_600_000
DEADLINE = 20.0
FILLER = (
    "The batch job walks every order row, rewrites its totals and commits in slices "
    "of ten thousand rows so the table stays available while it runs. "
)


def corpus(tmp_path: Path) -> list[Path]:
    """Many sessions about a migration (more results than a screen holds), one with a
    long tool output in the preview, one with CJK and accented text."""
    root = tmp_path / "claude"
    for n in range(9):
        write_claude_session(
            root,
            f"5e550000-0000-4000-8000-00000000000{n}",
            f"/srv/shop-{n}",
            [
                ("user", f"Session {n}: the orders migration locks the table. " + FILLER, T0),
                ("assistant", "Split the migration into batches. " + FILLER * (n % 3 + 1), T0 + 1),
                ("user", "The migration finished; thanks.", T0 + 2),
            ],
        )
    write_claude_session(
        root,
        "5e550000-0000-4000-8000-0000000000aa",
        "/srv/données",
        [
            ("user", "数据库迁移 migration: le résumé café a échoué…", T0 + 5),
            ("assistant", "Relancez la migration après 数据库 sauvegarde.", T0 + 6),
        ],
    )
    return [resolve_root(f"{root}:claude-code")]


@pytest.fixture
def service(tmp_path: Path, catalog: Catalog) -> HistoryService:
    roots = corpus(tmp_path)
    Indexer(catalog).run(roots)
    return HistoryService(catalog, roots, scope=roots)


def app_screen(
    service: HistoryService, query: str, look: FirstLook | None, size: tuple[int, int]
) -> list[str]:
    """The rows of the app's screen right after it started with ``look``."""
    first: Future[FirstLook] | None = None
    if look is not None:
        first = Future()
        first.set_result(look)
    app = Picker(service, query, index=False, first=first)

    async def drive() -> list[str]:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            return [strip.text for strip in app.screen._compositor.render_strips()]

    try:
        return asyncio.run(drive())
    finally:
        app.close()


@pytest.mark.parametrize(
    ("query", "size"),
    [
        ("migration", (100, 24)),  # more results than fit: scrollbars, a long preview
        ("migration", (61, 12)),  # a small screen: the list scrolls to the first hit
        ("migration", (160, 45)),
        ("finished thanks", (90, 20)),  # a few hits
        ("数据库 café", (100, 20)),  # wide characters and accents
        ("nosuchwordanywhere", (80, 16)),  # no hits
        ('"unclosed', (80, 16)),  # a query error
        ("", (80, 16)),  # nothing typed yet: the placeholder, the recent sessions
        ("agent:claude-code", (100, 20)),  # filters only: that agent's recent sessions
    ],
)
def test_the_first_frame_is_the_apps_first_screen(
    service: HistoryService, query: str, size: tuple[int, int]
) -> None:
    width, height = size
    filters = Filters()
    look = first_look(service, filters.request(query, os.getcwd()))
    frame = Frame(width, height, query, filters, look, os.path.expanduser("~")).plain()
    shown = app_screen(service, query, look, size)
    assert len(frame) == len(shown) == height
    for y, (drawn, app) in enumerate(zip(frame[:-1], shown[:-1], strict=True)):
        assert drawn == app, f"row {y} differs:\nfirst frame |{drawn}|\napp         |{app}|"
    assert frame[-1].strip() == ""  # the footer comes with the app
    if query == "migration":  # the results are in it, not only the search box
        assert frame[-2].startswith(" 29 hits in 10 sessions · ")
        assert any(re.search(r"  #\d user_text: ", row) for row in frame)
    if not query or query.startswith("agent:"):  # the recent sessions, newest first
        assert frame[-2].startswith(" 10 recent sessions · ")
        assert frame[3].startswith(" 数据库迁移 migration")
        assert any("#0 user" in row for row in frame)  # its opening messages


def test_a_screenful_first_then_the_whole_page(service: HistoryService) -> None:
    """With the first frame, the first search reads a screenful of hits; the app shows
    them at once, then the whole page, keeping the first hit highlighted."""
    filters = Filters()
    look = first_look(service, filters.request("migration", os.getcwd(), first_page(24)))
    assert isinstance(look.page, SearchPage) and len(look.page.hits) == 12
    first: Future[FirstLook] = Future()
    first.set_result(look)
    pool = search_thread()
    hold = threading.Event()
    pool.submit(hold.wait, DEADLINE)  # the app's own searches wait behind this
    app = Picker(service, "migration", index=False, first=first, pool=pool)

    async def drive() -> None:
        async with app.run_test(size=(100, 24)) as pilot:
            status = app.query_one("#status", Static)
            shown = app.selected()
            assert len(app.hits) == 12 and shown is not None
            assert str(status.content).startswith("12+ hits in ")
            hold.set()
            deadline = time.monotonic() + DEADLINE
            while len(app.hits) < 29:
                assert time.monotonic() < deadline, "the whole page never came"
                await pilot.pause(0.02)
            assert str(status.content).startswith("29 hits in 10 sessions")
            selected = app.selected()
            assert selected is not None and selected.ref == shown.ref

    asyncio.run(drive())
    app.close()
