"""Issue 29: the local surfaces ask the hub (SPEC S6). Two machines (two HOMEs) sync
into one real hub; the second one's ``convodex serve`` page in real Chromium and its
``convodex search --hub`` show the hub's hits beside the local ones, marked with
their machine and owner. A hub that cannot be reached is one line beside a local
answer that stands, and the account token never reaches the browser, the page's
scripts or the logs (MCP: test_hub_surfaces_mcp.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from server.hub_machines import LOCAL_NOTE, NOWHERE, SHOWN, SQLITE, UNREACHABLE, Team
from web.page_helpers import chromium, new_page


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


@SQLITE
def test_the_page_shows_hub_hits_beside_local_ones_without_the_token(
    team: Team, browser: Browser, tmp_path: Path
) -> None:
    logs = tmp_path / "serve.log"
    sent: list[str] = []
    with team.box.serving(logs) as url, new_page(browser) as page:
        page.on("request", lambda r: sent.append(r.url + json.dumps(r.headers)))
        page.goto(url)
        page.locator("#q").fill("rollback deploy")
        local = page.locator("#hits .hit")
        expect(local).to_have_count(1)
        expect(local.locator(".snippet")).to_have_text(LOCAL_NOTE)
        hub_hits = page.locator("#hub-hits .hit")
        expect(hub_hits).to_have_count(2)
        expect(page.locator("#hub-count")).to_have_text("2 hits")
        assert set(hub_hits.locator(".hub-where").all_text_contents()) == team.where
        # The page shows the hub's text as the page shows local text: as recorded.
        assert any(SHOWN in s for s in hub_hits.locator(".snippet").all_text_contents())
        expect(page.locator("#hub-notice")).to_be_hidden()
        # What the page's scripts can read of its server's hub answer: hits, no token.
        answer = page.evaluate("fetch('/hub/hits?q=rollback').then(r => r.text())")
        assert "ownerId" in answer and team.bob_token not in answer
        assert team.bob_token not in page.content()
        # Sessions listed without words: nothing to ask the hub.
        page.locator("#q").fill("")
        expect(page.locator("#hub")).to_be_hidden()
    assert sent and not [s for s in sent if team.bob_token in s]
    assert team.bob_token not in logs.read_text()


@SQLITE
def test_an_unreachable_hub_is_one_line_beside_the_local_hits(
    team: Team, browser: Browser, tmp_path: Path
) -> None:
    team.box.configure(NOWHERE, team.bob_token)
    logs = tmp_path / "serve.log"
    with team.box.serving(logs) as url, new_page(browser) as page:
        page.goto(url)
        page.locator("#q").fill("rollback deploy")
        expect(page.locator("#hits .hit .snippet")).to_have_text(LOCAL_NOTE)
        expect(page.locator("#hub-notice")).to_have_text(UNREACHABLE)
        expect(page.locator("#hub-hits .hit")).to_have_count(0)
        assert team.bob_token not in page.content()
    assert team.bob_token not in logs.read_text()
    # The CLI alike: the local hit, then the one line, and success.
    done = team.box.run("search", "--root", str(team.box.sessions), "--hub", "rollback deploy")
    assert done.returncode == 0, done.stderr
    assert LOCAL_NOTE in done.stdout
    assert f"hub {NOWHERE}: {UNREACHABLE}" in done.stdout
    assert team.bob_token not in done.stdout + done.stderr
