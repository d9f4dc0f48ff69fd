"""The web page (SPEC X3) in real headless Chromium, against the real app on a loopback port.

The search box, highlighting, the session view, progress and the token; filters, order
and the narrow layout are in test_page_filters.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Route, expect

from convodex.catalog.search import progress_sentence
from convodex.models import Progress
from helpers import write_session
from web.page_helpers import browser_page, folded, screenshot, serving

FILLER = (
    "We walked through the release checklist item by item: changelog, version bump, "
    "migration notes, the smoke tests on the preview environment and the rollback plan. "
)


def deploy_session() -> list[dict[str, Any]]:
    """A long session whose match sits deep enough that the view must scroll to it."""
    messages: list[dict[str, Any]] = []
    for n in range(12):
        role = "user" if n % 2 == 0 else "assistant"
        messages.append({"role": role, "content": f"Step {n}. " + FILLER * 2})
    messages.append(
        {"role": "user", "content": "The Flux capacitor overheats during the staging deploy."}
    )
    messages.append({"role": "assistant", "content": "Lower the capacitor load, then redeploy."})
    messages.append({"role": "user", "content": "That worked."})
    return messages


def write_corpus(root: Path) -> Path:
    path = write_session(
        root,
        "deploy",
        deploy_session(),
        {"name": "Staging deploy overheats", "workspace_root": "/home/dev/shop"},
    )
    write_session(
        root,
        "markup",
        [
            {"role": "user", "content": '<img src=x onerror="window.__pwned=1"> flux <b>bold</b>'},
            {"role": "assistant", "content": "That is markup, shown as text."},
        ],
        {"name": "<script>alert(1)</script> markup", "workspace_root": "/home/dev/web"},
    )
    write_session(
        root,
        "cjk",
        [{"role": "user", "content": "数据库迁移 flux 完成了吗"}],
        {"name": "迁移", "workspace_root": "/home/dev/shop"},
    )
    for n in range(4):
        write_session(
            root,
            f"filler{n}",
            [{"role": "user", "content": f"unrelated question number {n}"}],
            {"workspace_root": "/home/dev/other"},
        )
    return path


def test_search_highlight_open_in_context(root: Path, cache_dir: Path) -> None:
    deploy_path = write_corpus(root)
    errors: list[str] = []
    with serving(root, cache_dir) as base, browser_page() as page:
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        expected_errors = ["Failed to load resource: the server responded with a status of 400"]
        page.goto(base + "/")

        # The tree lists every session, with the progress bar complete.
        expect(page.locator("#progress")).to_have_attribute("data-state", "complete")
        expect(page.locator("#progress-text")).to_have_text("index complete: 7 of 7 sources")
        expect(page.locator("#tree .row")).to_have_count(7)
        expect(page.locator("#tree")).to_contain_text("Staging deploy overheats")

        # Search as you type: one word first.
        page.locator("#q").press_sequentially("flux", delay=40)
        hits = page.locator("#hits .hit")
        expect(hits).to_have_count(3)
        marks = page.locator("#hits mark").all_inner_texts()
        assert marks and {folded(m) for m in marks} == {"flux"}

        # Content is text, never markup: the tags show literally and nothing ran.
        markup = hits.filter(has_text="<img")
        expect(markup).to_have_count(1)
        expect(markup.locator(".hit-title")).to_have_text("<script>alert(1)</script> markup")
        assert page.locator("#hits img, #hits b, #hits script").count() == 0
        assert page.evaluate("window.__pwned") is None

        # A second word narrows the hits; both words are marked, case kept as written.
        page.locator("#q").press_sequentially(" capacitor", delay=40)
        expect(hits).to_have_count(1)
        hit = hits.first
        expect(hit.locator(".hit-title")).to_have_text("Staging deploy overheats")
        expect(hit.locator("mark")).to_have_text(["Flux", "capacitor"])

        # Open the hit: its context, with the hit message marked and scrolled into view.
        hit.click()
        target = page.locator("#messages .msg.hit")
        expect(target).to_have_count(1)
        expect(target).to_have_attribute("data-message-index", "12")
        expect(target).to_contain_text("overheats during the staging deploy")
        expect(target.locator("mark")).to_have_text(["Flux", "capacitor"])
        expect(target).to_be_in_viewport()
        indexes = [
            int(i)
            for i in page.locator("#messages .msg").evaluate_all(
                "els => els.map(e => e.dataset.messageIndex)"
            )
        ]
        assert indexes == list(range(4, 15))
        expect(page.locator("#session-title")).to_have_text("Staging deploy overheats")
        expect(page.locator("#session-meta")).to_contain_text(str(deploy_path))
        expect(page.locator("#messages .gap").first).to_contain_text("4 earlier messages")

        screenshot(page, "web-page.png")

        # The whole session, still at the hit.
        page.locator("#session-full").click()
        expect(page.locator("#messages .msg")).to_have_count(15)
        expect(target).to_be_in_viewport()

        # Newest first asks the server for sort=newest; kind filters go with every search.
        with page.expect_request(lambda r: "/search?" in r.url and "sort=newest" in r.url):
            page.locator("label", has_text="Newest").click()
        expect(hits).to_have_count(1)
        with page.expect_request(lambda r: "/search?" in r.url and "kind=user_text" not in r.url):
            page.locator("#kinds input[value=user_text]").uncheck()
        expect(hits).to_have_count(0)
        expect(page.locator("#hits-empty")).to_contain_text("No matches")

        # A CJK query marks the run as written.
        page.locator("#kinds input[value=user_text]").check()
        page.locator("#q").fill("迁移")
        expect(hits).to_have_count(1)
        expect(hits.first.locator("mark")).to_have_text(["迁移"])

        # A query without letters or digits is explained, not an empty page.
        page.locator("#q").fill("??")
        expect(page.locator("#hits-notice")).to_contain_text(
            "query must contain at least one letter or number"
        )

        # Opening a session from the tree shows all of it.
        page.locator("#tree .row", has_text="Staging deploy overheats").click()
        expect(page.locator("#messages .msg")).to_have_count(15)
    assert [e for e in errors if not any(e.startswith(x) for x in expected_errors)] == []


def test_progress_is_explicit_and_polling_replaces_events(root: Path, cache_dir: Path) -> None:
    """Without server-sent events the page polls, and an incomplete index is spelled out."""
    write_corpus(root)
    # One source of truth for every progress the page sees: /status, in the server's
    # shape (the state, its counts and the library's sentence for them).
    counts: dict[str, Any] = {
        "state": "indexing",
        "indexed": 3,
        "total": 10,
        "pending": 7,
        "failed": 0,
        "revision": 1,
    }

    def status() -> dict[str, Any]:
        return {**counts, "sentence": progress_sentence(Progress(**counts)), "reason": "index"}

    with serving(root, cache_dir) as base, browser_page() as page:

        def fake_status(route: Route) -> None:
            route.fulfill(json=status())

        def building_search(route: Route) -> None:
            response = route.fetch()
            body = response.json()
            body["progress"] = dict(counts)
            route.fulfill(response=response, json=body)

        page.route("**/events", lambda route: route.fulfill(status=503, body="gone"))
        page.route("**/status", fake_status)
        page.route("**/search?*", building_search)
        page.goto(base + "/")

        expect(page.locator("#progress")).to_have_attribute("data-state", "indexing")
        expect(page.locator("#progress-text")).to_have_text(
            "index is still building (3/10); results may be incomplete"
        )
        expect(page.locator("#progress .bar")).to_have_attribute("aria-valuenow", "30")
        page.locator("#q").fill("flux")
        expect(page.locator("#hits .hit")).to_have_count(3)
        expect(page.locator("#hits-notice")).to_have_text(
            "index is still building (3/10); results may be incomplete"
        )

        # Polling picks up the finished index, and the notice over the hits goes away.
        counts.update(state="complete", indexed=10, pending=0, revision=2)
        expect(page.locator("#progress-text")).to_have_text("index complete: 10 of 10 sources")
        expect(page.locator("#progress")).to_have_attribute("data-state", "complete")
        expect(page.locator("#hits-notice")).to_be_hidden()
        expect(page.locator("#hits .hit")).to_have_count(3)


def test_a_token_in_the_page_url_goes_with_every_api_request(root: Path, cache_dir: Path) -> None:
    """``serve --allow-remote`` guards the API with a token; the page opened as /?token=… works."""
    write_corpus(root)
    token = "s3cret-token"
    with serving(root, cache_dir, token=token) as base, browser_page() as page:
        # The page and its static files load without the token; the data does not.
        assert httpx.get(f"{base}/search", params={"q": "flux"}).status_code == 401
        assert httpx.get(f"{base}/static/app.js").status_code == 200
        page.goto(f"{base}/?token={token}")
        expect(page.locator("#progress-text")).to_have_text("index complete: 7 of 7 sources")
        expect(page.locator("#tree .row")).to_have_count(7)
        page.locator("#q").fill("flux capacitor")
        expect(page.locator("#hits .hit")).to_have_count(1)
        page.locator("#hits .hit").first.click()
        expect(page.locator("#messages .msg.hit")).to_contain_text("overheats")
        assert "token=" in page.url  # the search kept it for reloads


def test_the_keyboard_moves_through_hits_and_opens_one(root: Path, cache_dir: Path) -> None:
    """Issue 24: ↓ from the box to the first hit, ↓ ↑ between hits, Enter opens the one
    chosen, ↑ from the first goes back to the box; the tree's rows move the same way."""
    write_corpus(root)
    with serving(root, cache_dir) as base, browser_page() as page:
        page.goto(base + "/")
        expect(page.locator("#tree .row")).to_have_count(7)
        page.locator("#q").fill("flux")
        hits = page.locator("#hits .hit")
        expect(hits).to_have_count(3)
        page.locator("#q").press("ArrowDown")
        expect(hits.nth(0)).to_be_focused()
        page.keyboard.press("ArrowDown")
        expect(hits.nth(1)).to_be_focused()
        page.keyboard.press("End")
        expect(hits.nth(2)).to_be_focused()
        page.keyboard.press("ArrowUp")
        expect(hits.nth(1)).to_be_focused()
        chosen = hits.nth(1).get_attribute("data-session-path")
        page.keyboard.press("Enter")
        expect(hits.nth(1)).to_have_class("hit selected")
        expect(page.locator("#messages .msg.hit")).to_have_count(1)
        assert page.locator("#session-meta").inner_text().endswith(str(chosen))
        expect(page.locator("#messages .msg.hit mark").first).to_have_text("flux", ignore_case=True)
        page.keyboard.press("Home")
        expect(hits.nth(0)).to_be_focused()
        page.keyboard.press("ArrowUp")
        expect(page.locator("#q")).to_be_focused()
        # The tree: a row, then the next, then Enter opens that session whole.
        rows = page.locator("#tree .row")
        rows.nth(0).focus()
        page.keyboard.press("ArrowDown")
        expect(rows.nth(1)).to_be_focused()
        title = rows.nth(1).locator(".title").inner_text()
        page.keyboard.press("Enter")
        expect(page.locator("#session-title")).to_have_text(title)
        page.keyboard.press("Escape")
        expect(page.locator("#q")).to_be_focused()


def test_a_query_of_filters_only_lists_sessions(root: Path, cache_dir: Path) -> None:
    """Issue 24: browsing without words lists the sessions, newest first; one opens whole."""
    write_corpus(root)
    with serving(root, cache_dir) as base, browser_page() as page:
        page.goto(base + "/")
        page.locator("#q").fill("agent:session-log")
        items = page.locator("#hits .session-item")
        expect(items).to_have_count(7)
        expect(page.locator("#hits-count")).to_have_text("7 sessions")
        expect(page.locator("#hits mark")).to_have_count(0)
        items.filter(has_text="Staging deploy overheats").click()
        expect(page.locator("#messages .msg")).to_have_count(15)
        page.locator("#q").fill("agent:codex")
        expect(page.locator("#hits-empty")).to_have_text("No sessions.")
