"""Finding things on the web page the way people look for them (SPEC L12, L13, L14, X3).

Sessions from three agents (native session logs, Claude Code, Codex) in three projects,
with messages at known times relative to now; one server and one Chromium serve every
test, each test in a fresh browser context. Every assertion reads what the page shows.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from convodex.sources.roots import resolve_root
from helpers import write_claude_session, write_codex_rollout, write_session
from web.page_helpers import isolated_site, new_page, opened_page, screenshot

HOUR = 3_600_000
DAY = 24 * HOUR
NOW = int(time.time() * 1000)
LONG_PROJECT = "/home/dev/a-rather-long-monorepo-directory-name/packages/frontend-application"


@dataclass(frozen=True)
class Talk:
    """One session: who wrote it, where, when, what was said (user, then assistant)."""

    session_id: str
    agent: str
    project: str
    at: int
    user: str
    assistant: str
    title: str | None = None

    @property
    def times(self) -> tuple[int, int]:
        return self.at, self.at + 60_000


TALKS = [
    Talk(
        "shop-rotate",
        "session_log",
        "/home/dev/shop",
        NOW - 2 * HOUR,
        "How do we rotate the signing keys for the shop?",
        "Rotate the signing keys with the vault CLI, then redeploy.",
        title="Rotate shop keys",
    ),
    Talk(
        "shop-expiry",
        "session_log",
        "/home/dev/shop",
        NOW - 5 * DAY,
        "Which keys expire next month? Signing happens nightly.",
        "Two keys expire soon; the vault lists them.",
    ),
    Talk(
        "claude-billing",
        "claude_code",
        "/srv/team/billing",
        NOW - 3 * DAY,
        "Billing export drops rows when the signing keys rotate",
        "The export caches the old keys.",
    ),
    Talk(
        "claude-ledger",
        "claude_code",
        "/srv/team/billing",
        NOW - 20 * DAY,
        "Ledger totals are off by one cent although the keys are fine",
        "Rounding happens before the sum.",
    ),
    Talk(
        "codex-index",
        "codex",
        "/srv/team/search-api",
        NOW - 12 * DAY,
        "Reindex the search API after the keys change",
        "Reindexing with the new keys now.",
    ),
    Talk(
        "codex-old",
        "codex",
        "/srv/team/search-api",
        NOW - 60 * DAY,
        "Old signing keys are still cached in the search API",
        "Flush that cache.",
    ),
    Talk(
        "deep-package",
        "session_log",
        LONG_PROJECT,
        NOW - 40 * DAY,
        "Where do the keys of "
        "averyveryverylongunbrokenidentifierthatgoesonandonandonwithoutanyspaceatall live?",
        "In the environment file.",
    ),
]


def keys_messages(talks: list[Talk] = TALKS, without: str = "") -> list[tuple[str, int]]:
    """(session, time) of every message that holds the word "keys" (and not ``without``)."""
    out = []
    for talk in talks:
        for text, at in zip((talk.user, talk.assistant), talk.times, strict=True):
            words = re.findall(r"\w+", text.lower())
            if "keys" in words and without not in words:
                out.append((talk.session_id, at))
    return out


def iso(epoch_ms: int) -> str:
    """The time as the page's <time datetime> carries it (``Date.toISOString``)."""
    moment = datetime.fromtimestamp(epoch_ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def local_day(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000).date().isoformat()


def write_corpus(base: Path) -> list[Path]:
    native, claude, codex = base / "native", base / "claude", base / "codex"
    for talk in TALKS:
        if talk.agent == "session_log":
            user, assistant = talk.times
            messages = [
                {"role": "user", "content": talk.user, "createdAt": user},
                {"role": "assistant", "content": talk.assistant, "createdAt": assistant},
            ]
            meta: dict[str, Any] = {"workspace_root": talk.project}
            if talk.title:
                meta["name"] = talk.title
            write_session(native, talk.session_id, messages, meta)
            continue
        turns = [
            ("user", talk.user, talk.times[0]),
            ("assistant", talk.assistant, talk.times[1]),
        ]
        if talk.agent == "claude_code":
            write_claude_session(claude, talk.session_id, talk.project, turns)
        else:
            write_codex_rollout(codex, talk.session_id, talk.project, turns)
    # A sub-agent's session: left out of searches unless asked for.
    write_session(
        native,
        "helper",
        [{"role": "user", "content": "zeppelin inventory", "createdAt": NOW - HOUR}],
        {"workspace_root": "/home/dev/shop"},
        subdir="subagents",
    )
    return [
        resolve_root(native),
        resolve_root(f"{claude}:claude-code"),
        resolve_root(f"{codex}:codex"),
    ]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Browser]]:
    """One indexed server and one browser for the module (each test gets its own page)."""
    with isolated_site(tmp_path_factory.mktemp("page-filters"), write_corpus) as site:
        yield site


@pytest.fixture
def page(site: tuple[str, Browser]) -> Iterator[Page]:
    # A query the server rejects (400) is shown on the page; the browser logs it too.
    rejected = "Failed to load resource: the server responded with a status of 400"
    with opened_page(site, allowed=[rejected]) as page:
        yield page


@pytest.fixture
def base_url(site: tuple[str, Browser]) -> str:
    return site[0]


def hits(page: Page) -> Locator:
    return page.locator("#hits .hit")


def search(page: Page, query: str) -> None:
    page.locator("#q").fill(query)
    page.locator("#q").press("Enter")


def shown_sessions(page: Page) -> set[str]:
    ids: list[str] = hits(page).evaluate_all("els => els.map(e => e.dataset.sessionId)")
    return set(ids)


def expect_sessions(page: Page, expected: set[str], count: int) -> None:
    """Waits until the page shows ``count`` hits, then checks which sessions they are."""
    expect(hits(page)).to_have_count(count)
    assert shown_sessions(page) == expected


def expect_times(page: Page, expected: list[int]) -> None:
    """Waits until the hits' times (<time datetime>) are exactly these, in this order."""
    want = [iso(at) for at in expected]
    script = """want => JSON.stringify(
        [...document.querySelectorAll('#hits .hit time')].map(t => t.dateTime)
    ) === JSON.stringify(want)"""
    try:
        page.wait_for_function(script, arg=want)
    except Exception:
        shown = page.locator("#hits .hit time").evaluate_all("els => els.map(e => e.dateTime)")
        raise AssertionError(f"hit times {shown} != {want}") from None


def page_params(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def wait_for_filters(page: Page) -> None:
    """The agent chips and projects come from the session tree."""
    expect(page.locator("#agents .chip")).to_have_text(["claude-code", "codex", "session-log"])


def test_agent_chips_narrow_hits_to_those_agents(page: Page) -> None:
    wait_for_filters(page)
    search(page, "keys")
    expect_sessions(page, {t.session_id for t in TALKS}, len(keys_messages()))

    page.locator("#agents .chip", has_text="codex").click()
    expect(hits(page).locator(".hit-agent")).to_have_text(["codex"] * 3)
    assert shown_sessions(page) == {"codex-index", "codex-old"}
    assert page_params(page)["agent"] == ["codex"]

    # A second chip adds its agent; hits keep their agent's readable name.
    page.locator("#agents .chip", has_text="claude-code").click()
    expect(hits(page)).to_have_count(6)
    assert shown_sessions(page) == {"codex-index", "codex-old", "claude-billing", "claude-ledger"}
    agents = set(hits(page).locator(".hit-agent").all_inner_texts())
    assert agents == {"codex", "claude-code"}
    screenshot(page, "web-page-filters.png")

    # Unchecking both shows every agent again.
    page.locator("#agents .chip", has_text="codex").click()
    page.locator("#agents .chip", has_text="claude-code").click()
    expect(hits(page)).to_have_count(len(keys_messages()))
    assert "agent" not in page_params(page)


def test_project_picker_narrows_hits_to_that_workspace(page: Page) -> None:
    wait_for_filters(page)
    options = page.locator("#project option")
    expect(options).to_have_text(
        ["All projects", "…/dev/shop", "…/packages/frontend-application", "…/team/billing",
         "…/team/search-api"]
    )  # fmt: skip
    expect(page.locator("#project option[value='/srv/team/billing']")).to_have_attribute(
        "title", "/srv/team/billing"
    )
    search(page, "keys")
    expect(hits(page)).to_have_count(len(keys_messages()))
    page.locator("#project").select_option("/srv/team/billing")
    expect_sessions(page, {"claude-billing", "claude-ledger"}, 3)
    projects = hits(page).locator(".hit-project")
    expect(projects).to_have_text(["…/team/billing"] * 3)
    expect(projects.first).to_have_attribute("title", "/srv/team/billing")
    assert page_params(page)["project"] == ["/srv/team/billing"]


def test_date_presets_and_custom_dates(page: Page) -> None:
    search(page, "keys")
    expect(hits(page)).to_have_count(len(keys_messages()))

    page.locator("#when").select_option(label="Last 24 hours")
    expect_sessions(page, {"shop-rotate"}, 2)
    assert page_params(page)["since"] == ["24h"]
    page.locator("#when").select_option(label="Last 7 days")
    expect_sessions(page, {"shop-rotate", "claude-billing", "shop-expiry"}, 6)
    page.locator("#when").select_option(label="Last 30 days")
    recent = [t for t in TALKS if t.at > NOW - 30 * DAY]
    expect_sessions(page, {t.session_id for t in recent}, len(keys_messages(recent)))

    # Custom dates: from 13 days ago to 11 days ago finds the Codex session of 12 days ago.
    page.locator("#when").select_option(label="Custom dates…")
    expect(page.locator("#since")).to_be_visible()
    page.locator("#since").fill(local_day(NOW - 13 * DAY))
    page.locator("#until").fill(local_day(NOW - 11 * DAY))
    expect_sessions(page, {"codex-index"}, 2)
    params = page_params(page)
    assert params["since"] == [local_day(NOW - 13 * DAY)]
    assert params["until"] == [local_day(NOW - 11 * DAY)]


def test_newest_and_oldest_follow_the_messages_own_times(page: Page) -> None:
    search(page, "keys")
    messages = keys_messages()
    expect(hits(page)).to_have_count(len(messages))
    times = [at for _, at in messages]
    with page.expect_request(lambda r: "/search?" in r.url and "sort=newest" in r.url):
        page.locator("#sort label", has_text="Newest").click()
    expect_times(page, sorted(times, reverse=True))
    assert hits(page).first.get_attribute("data-session-id") == "shop-rotate"
    with page.expect_request(lambda r: "/search?" in r.url and "sort=oldest" in r.url):
        page.locator("#sort label", has_text="Oldest").click()
    expect_times(page, sorted(times))
    assert hits(page).first.get_attribute("data-session-id") == "codex-old"
    assert page_params(page)["sort"] == ["oldest"]
    # Back to relevance: the order is the server's ranking, not the time.
    page.locator("#sort label", has_text="Relevance").click()
    expect(hits(page)).to_have_count(len(messages))
    assert "sort" not in page_params(page)


def test_phrases_and_exclusions_typed_in_the_box(page: Page) -> None:
    search(page, '"signing keys"')
    # "Signing happens nightly" has both words but not the phrase: not a hit.
    expect_sessions(page, {"shop-rotate", "claude-billing", "codex-old"}, 4)
    expect(hits(page).locator("mark")).to_have_text(["signing keys"] * 4, ignore_case=True)

    search(page, "keys -vault")
    expected = keys_messages(without="vault")
    assert len(expected) == len(keys_messages()) - 2
    expect(hits(page)).to_have_count(len(expected))
    shown = hits(page).locator("time").evaluate_all("els => els.map(e => e.dateTime)")
    assert sorted(shown) == sorted(iso(at) for _, at in expected)
    for snippet in hits(page).locator(".snippet").all_inner_texts():
        assert "vault" not in snippet
    # Only the positive word is marked; the excluded one never shows.
    marks = {m.lower() for m in hits(page).locator("mark").all_inner_texts()}
    assert marks == {"keys"}

    # Qualifiers in the box work as is; a bad one is the server's one-line error.
    search(page, "keys agent:codex project:search-api")
    expect_sessions(page, {"codex-index", "codex-old"}, 3)
    search(page, "keys colour:red")
    expect(page.locator("#hits-notice")).to_contain_text("unknown qualifier 'colour:'")
    expect(hits(page)).to_have_count(0)


def test_hits_are_readable(page: Page) -> None:
    search(page, "keys")
    expect(hits(page)).to_have_count(len(keys_messages()))
    by_id = {t.session_id: t for t in TALKS}
    for hit in hits(page).all():
        talk = by_id[hit.get_attribute("data-session-id") or ""]
        title = hit.locator(".hit-title").text_content()
        # The format's title, else the first user message (≤ 80 characters); never the id.
        first = talk.user if len(talk.user) <= 80 else talk.user[:80] + "…"
        assert title == (talk.title or first) != talk.session_id
        assert hit.locator(".hit-agent").inner_text() == talk.agent.replace("_", "-")
        project = hit.locator(".hit-project")
        assert project.get_attribute("title") == talk.project
        assert project.inner_text() == "…/" + "/".join(talk.project.split("/")[-2:])
        when = hit.locator("time").get_attribute("datetime")
        assert when in {iso(at) for at in talk.times}
        assert hit.locator(".snippet mark").count() >= 1


def test_subagent_hits_are_announced_and_included_in_one_click(page: Page) -> None:
    search(page, "keys")
    expect(hits(page)).to_have_count(len(keys_messages()))
    expect(page.locator("#subagent-notice")).to_be_hidden()

    search(page, "zeppelin")
    expect(page.locator("#hits-empty")).to_contain_text("No matches")
    notice = page.locator("#subagent-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("Sub-agent sessions match")
    notice.get_by_role("button", name="Include sub-agents").click()
    expect_sessions(page, {"helper"}, 1)
    expect(notice).to_be_hidden()
    expect(page.locator("#subagents")).to_be_checked()
    assert page_params(page)["includeSubagents"] == ["1"]


def test_filters_and_order_come_back_from_the_url(page: Page, base_url: str) -> None:
    wait_for_filters(page)
    search(page, "keys")
    page.locator("#agents .chip", has_text="codex").click()
    page.locator("#project").select_option("/srv/team/search-api")
    page.locator("#when").select_option(label="Last 30 days")
    page.locator("#sort label", has_text="Oldest").click()
    page.locator("#kinds input[value=assistant_text]").uncheck()
    expect_sessions(page, {"codex-index"}, 1)
    params = page_params(page)
    assert params["q"] == ["keys"] and params["agent"] == ["codex"]
    assert params["since"] == ["30d"] and params["sort"] == ["oldest"]
    assert params["kind"] == ["user_text", "tool_input", "tool_error"]

    page.reload()
    expect_sessions(page, {"codex-index"}, 1)
    expect(page.locator("#q")).to_have_value("keys")
    expect(page.locator("#agents .chip input[value=codex]")).to_be_checked()
    expect(page.locator("#agents .chip input[value=claude-code]")).not_to_be_checked()
    expect(page.locator("#project")).to_have_value("/srv/team/search-api")
    expect(page.locator("#when")).to_have_value("30d")
    expect(page.locator("#sort input[value=oldest]")).to_be_checked()
    expect(page.locator("#kinds input[value=assistant_text]")).not_to_be_checked()

    # A bookmark with custom dates and Newest opens with them set; the older
    # latest=1 still means Newest.
    since, until = local_day(NOW - 21 * DAY), local_day(NOW - 2 * DAY)
    page.goto(f"{base_url}/?q=keys&agent=claude_code&since={since}&until={until}&latest=1")
    expect(page.locator("#when")).to_have_value("custom")
    expect(page.locator("#since")).to_have_value(since)
    expect(page.locator("#until")).to_have_value(until)
    expect(page.locator("#sort input[value=newest]")).to_be_checked()
    expect(page.locator("#agents .chip input[value=claude-code]")).to_be_checked()
    claude = [t for t in TALKS if t.agent == "claude_code"]
    expect_times(page, sorted((at for _, at in keys_messages(claude)), reverse=True))


OVERFLOW = """() => {
    const width = document.documentElement.clientWidth;
    return [...document.querySelectorAll('body *')]
        .filter(e => { const r = e.getBoundingClientRect(); return r.width && r.right > width + 0.5; })
        .map(e => `${e.tagName.toLowerCase()}#${e.id}.${e.className} right=${e.getBoundingClientRect().right}`);
}"""  # noqa: E501


def test_the_page_fits_a_390_pixel_phone(site: tuple[str, Browser]) -> None:
    url, browser = site
    with new_page(browser, width=390, height=844) as page:
        since, until = local_day(NOW - 70 * DAY), local_day(NOW)
        page.goto(f"{url}/?q=keys&since={since}&until={until}&project={LONG_PROJECT}")
        wait_for_filters(page)
        expect(hits(page)).to_have_count(1)
        page.locator("#project").select_option("")
        expect(hits(page)).to_have_count(len(keys_messages()))
        expect(page.locator("#dates")).to_be_visible()

        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert page.evaluate(OVERFLOW) == []
        # The order control is whole and on screen, every choice of it.
        sort = page.locator("#sort").bounding_box()
        assert sort is not None
        assert sort["x"] >= 0 and sort["x"] + sort["width"] <= 390
        assert sort["y"] >= 0 and sort["y"] + sort["height"] <= 844
        for label in page.locator("#sort label").all():
            expect(label).to_be_in_viewport(ratio=1)
        expect(page.locator("#q")).to_be_in_viewport(ratio=1)
        # A hit's actions (copy its resume command, export it) fit, the choices open too.
        claude = page.locator("#hits .hit[data-session-id='claude-billing']").first
        copy = claude.get_by_role("button", name="Copy resume command")
        claude.scroll_into_view_if_needed()
        expect(copy).to_be_in_viewport(ratio=1)
        claude.get_by_role("button", name="Export").click()
        choices = claude.locator(".export-menu a").all() + [claude.get_by_label("redact secrets")]
        for choice in choices:
            expect(choice).to_be_in_viewport(ratio=1)
        assert page.evaluate(OVERFLOW) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        screenshot(page, "web-page-390.png", full_page=True)

        # A hit opens over the results, full width, and closes back to them.
        page.locator("#hits .hit[data-session-id='deep-package']").click()
        expect(page.locator("#messages .msg.hit")).to_be_in_viewport()
        page.locator("#session-tools").get_by_role("button", name="Export").click()
        expect(page.locator("#session-tools .export-menu")).to_be_in_viewport(ratio=1)
        assert page.evaluate(OVERFLOW) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        screenshot(page, "web-page-390-session.png")
        page.locator("#session-close").click()
        expect(page.locator("#session")).to_be_hidden()
