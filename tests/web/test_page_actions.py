"""From a hit on the web page back to work (SPEC L15): "Copy resume command" and "Export"
on every hit and on the opened session, in real Chromium against the real app.

The clipboard is read back through the browser's own clipboard (permissions granted to
the page's origin); downloads are caught with Playwright's ``expect_download`` and their
files read. A session of an agent without a resume command offers no copy button.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Download, Locator, Page, expect

from convodex.sources.roots import resolve_root
from helpers import write_claude_session, write_session
from web.page_helpers import isolated_site, new_page, opened_page, screenshot, serving

NOW = int(time.time() * 1000)
SECRET = "sk-proj-4fJq9ZxT2mLw8RkP1vN6bY3cH7dS0aEo"
CLAUDE_ID = "5e551011-0000-4000-8000-00000000b111"
CLAUDE_PROJECT = "/srv/team/billing"
# The documented Claude Code resume command, run in the session's workspace.
CLAUDE_RESUME = f"cd {CLAUDE_PROJECT} && claude --resume {CLAUDE_ID}"
NATIVE_ID = "native-rotation"
TOKEN = "page-actions-token-3f9a"


def write_corpus(base: Path) -> list[Path]:
    claude, native = base / "claude", base / "native"
    write_claude_session(
        claude,
        CLAUDE_ID,
        CLAUDE_PROJECT,
        [
            ("user", f"The invoice export fails with the key {SECRET}", NOW - 60_000),
            ("assistant", "The invoice export needs the new key; rotate it first.", NOW),
        ],
    )
    write_session(
        native,
        NATIVE_ID,
        [
            {"role": "user", "content": "Which invoice template do we use?"},
            {"role": "assistant", "content": "The plain invoice template."},
        ],
        {"name": "Invoice template", "workspace_root": "/home/dev/shop"},
    )
    return [resolve_root(f"{claude}:claude-code"), resolve_root(native)]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Browser]]:
    with isolated_site(tmp_path_factory.mktemp("page-actions"), write_corpus) as site:
        yield site


@pytest.fixture
def page(site: tuple[str, Browser]) -> Iterator[Page]:
    with opened_page(site, permissions=["clipboard-read", "clipboard-write"]) as page:
        yield page


def search(page: Page, query: str, count: int) -> Locator:
    page.locator("#q").fill(query)
    page.locator("#q").press("Enter")
    hits = page.locator("#hits .hit")
    expect(hits).to_have_count(count)
    return hits


def hit_of(page: Page, session_id: str) -> Locator:
    return page.locator(f"#hits .hit[data-session-id='{session_id}']").first


def clipboard(page: Page) -> str:
    text: str = page.evaluate("navigator.clipboard.readText()")
    return text


def download(page: Page, actions: Locator, fmt: str, redact: bool = False) -> tuple[str, str]:
    """Opens the export choices of an action bar and downloads one: (file name, content)."""
    menu = actions.locator(".export-menu")
    if menu.is_hidden():
        actions.get_by_role("button", name="Export").click()
    expect(menu).to_be_visible()
    box = menu.get_by_label("redact secrets")
    box.set_checked(redact)
    with page.expect_download() as caught:
        menu.get_by_role("link", name=fmt).click()
    got: Download = caught.value
    path = got.path()
    assert got.failure() is None and path is not None
    return got.suggested_filename, Path(path).read_text("utf-8")


def test_copy_resume_command_from_a_hit_and_from_the_session(page: Page) -> None:
    search(page, "invoice", 4)
    claude = hit_of(page, CLAUDE_ID)
    copy = claude.get_by_role("button", name="Copy resume command")
    expect(copy).to_have_attribute("title", CLAUDE_RESUME)
    copy.click()
    status = claude.locator(".copy-status")
    expect(status).to_have_text("Copied")
    assert clipboard(page) == CLAUDE_RESUME
    expect(page.locator("#session")).to_be_hidden()  # the button did not open the hit
    expect(status).to_be_hidden()  # the confirmation is short

    # A native session log has no resume command: no copy button, but an export one.
    native = hit_of(page, NATIVE_ID)
    expect(native.get_by_role("button", name="Copy resume command")).to_have_count(0)
    expect(native.get_by_role("button", name="Export")).to_be_visible()

    # The opened session offers the same, from the hit...
    page.evaluate("navigator.clipboard.writeText('')")
    claude.locator(".snippet").click()
    tools = page.locator("#session-tools")
    tools.get_by_role("button", name="Copy resume command").click()
    expect(tools.locator(".copy-status")).to_have_text("Copied")
    assert clipboard(page) == CLAUDE_RESUME
    hit_of(page, NATIVE_ID).locator(".snippet").click()
    expect(page.locator("#messages .msg.hit")).to_contain_text("invoice template")
    expect(tools.get_by_role("button", name="Copy resume command")).to_have_count(0)
    expect(tools.get_by_role("button", name="Export")).to_be_visible()

    # ... and, opened from the session tree, from the session itself (GET /sessions/{id}).
    page.evaluate("navigator.clipboard.writeText('')")
    page.locator(f"#tree .row[data-session-id='{CLAUDE_ID}']").click()
    tools.get_by_role("button", name="Copy resume command").click()
    expect(tools.locator(".copy-status")).to_have_text("Copied")
    assert clipboard(page) == CLAUDE_RESUME


def test_copy_falls_back_to_a_selected_box_without_a_clipboard(site: tuple[str, Browser]) -> None:
    url, browser = site
    with new_page(browser) as page:
        # As on a page served to another machine over plain http: no navigator.clipboard.
        page.add_init_script("delete Navigator.prototype.clipboard")
        page.goto(url + "/")
        assert page.evaluate("navigator.clipboard === undefined")
        search(page, "invoice", 4)
        claude = hit_of(page, CLAUDE_ID)
        claude.get_by_role("button", name="Copy resume command").click()
        box = claude.get_by_role("textbox", name="Resume command")
        expect(box).to_be_visible()
        expect(box).to_have_value(CLAUDE_RESUME)
        expect(box).to_be_focused()
        selected = box.evaluate("b => b.value.slice(b.selectionStart, b.selectionEnd)")
        assert selected == CLAUDE_RESUME  # Ctrl+C copies it
        expect(claude.locator(".copy-status")).to_contain_text("Ctrl+C")
        expect(page.locator("#session")).to_be_hidden()


def test_export_downloads_every_format_and_redacts(page: Page) -> None:
    search(page, "invoice", 4)
    actions = hit_of(page, CLAUDE_ID).locator(".actions")
    name, markdown = download(page, actions, "Markdown")
    assert name == f"{CLAUDE_ID}.md"
    assert "The invoice export needs the new key" in markdown and SECRET in markdown
    assert f"`{CLAUDE_RESUME}`" in markdown
    expect(page.locator("#session")).to_be_hidden()  # exporting did not open the hit

    name, html = download(page, actions, "HTML")
    assert name == f"{CLAUDE_ID}.html"
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert "The invoice export needs the new key" in html

    name, text = download(page, actions, "JSON", redact=True)
    document = json.loads(text)
    assert name == f"{CLAUDE_ID}.json"
    assert document["sessionId"] == CLAUDE_ID and document["redacted"] is True
    assert [m["messageIndex"] for m in document["messages"]] == [0, 1]
    assert SECRET not in text and "[redacted]" in text

    # The redact choice stays for the next export, from the opened session too.
    hit_of(page, CLAUDE_ID).locator(".snippet").click()
    tools = page.locator("#session-tools")
    tools.get_by_role("button", name="Export").click()
    expect(tools.get_by_label("redact secrets")).to_be_checked()
    name, redacted = download(page, tools, "Markdown", redact=True)
    assert name == f"{CLAUDE_ID}.md" and SECRET not in redacted and "[redacted]" in redacted
    screenshot(page, "web-page-actions.png")

    # A session of an agent without a resume command exports all the same.
    hit_of(page, NATIVE_ID).get_by_role("button", name="Export").click()
    name, native = download(page, hit_of(page, NATIVE_ID).locator(".actions"), "Markdown")
    assert name == f"{NATIVE_ID}.md" and "The plain invoice template." in native


def test_export_links_carry_the_pages_token(site: tuple[str, Browser], tmp_path: Path) -> None:
    """Behind ``--allow-remote``'s token (another server; the module's browser)."""
    roots = write_corpus(tmp_path / "sessions")
    with serving(roots, tmp_path / "cache", token=TOKEN) as url, new_page(site[1]) as page:
        assert httpx.get(f"{url}/sessions/{CLAUDE_ID}/export").status_code == 401
        page.goto(f"{url}/?token={TOKEN}")
        search(page, "invoice", 4)
        actions = hit_of(page, CLAUDE_ID).locator(".actions")
        actions.get_by_role("button", name="Export").click()
        href = actions.get_by_role("link", name="HTML").get_attribute("href") or ""
        assert f"token={TOKEN}" in href
        name, html = download(page, actions, "HTML")
        assert name == f"{CLAUDE_ID}.html" and "The invoice export needs the new key" in html
