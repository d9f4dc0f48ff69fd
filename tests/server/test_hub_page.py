"""Issue 29: the hub's web page (team search, session view), in real Chromium against
a real hub server on both databases (SPEC S6, X3)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from convodex.server import Database, append, create_session
from convodex.server.teams import add_member, create_team
from convodex.web.server_app import create_app
from server.server_helpers import assistant, serving, set_session_facts, user
from server_fixtures import People
from web.page_helpers import chromium, new_page


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


def test_a_team_member_searches_the_team_and_reads_a_session(
    db: Database, people: People, browser: Browser
) -> None:
    create_team(db, "eng")
    add_member(db, "eng", "alice")
    add_member(db, "eng", "bob")
    shared = create_session(db, people.alice.id, title="release night", team="eng")
    append(db, shared, user("how do we deploy tonight?"))
    append(db, shared, assistant("deploy at nine, rollback plan ready"))
    set_session_facts(db, shared, "laptop", "claude_code", "~/work/app")
    private = create_session(db, people.alice.id, title="alice alone")
    append(db, private, user("a private rollback deploy note <b>bold</b>"))
    with serving(create_app(db)) as url, new_page(browser) as page:
        page.goto(url + "/hub")
        page.get_by_label("token").fill("cdx_wrong")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("status")).to_have_text("the bearer token is not valid")
        page.get_by_label("token").fill(people.tokens["bob"])
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("status")).to_have_text("0 sessions")  # bob owns none
        page.get_by_label("scope").select_option("team")
        page.get_by_label("query").fill("rollback deploy")
        page.get_by_role("button", name="Search").click()
        hits = page.locator(".hit")
        expect(hits).to_have_count(1)
        expect(hits.first.locator(".where")).to_have_text(
            f"laptop · claude_code · {people.alice.id} · ~/work/app"
        )
        expect(hits.first.locator(".snippet")).to_have_text("deploy at nine, rollback plan ready")
        hits.first.click()
        expect(page.locator("#session-title")).to_have_text("release night")
        entries = page.locator("#entries li")
        expect(entries).to_have_count(2)
        expect(entries.nth(1)).to_have_class("assistant focus")
        expect(entries.nth(0)).to_contain_text("how do we deploy tonight?")
        # Literal mode and the team list, same page.
        page.get_by_label("mode").select_option("literal")
        page.get_by_label("query").fill("rollback plan")
        page.get_by_role("button", name="Search").click()
        expect(page.locator(".hit")).to_have_count(1)
        page.get_by_label("query").fill("")
        page.get_by_role("button", name="Search").click()
        expect(page.locator(".listed .title")).to_have_text(["release night"])
        # Instance scope is for administrators.
        page.get_by_label("scope").select_option("instance")
        page.get_by_role("button", name="Search").click()
        expect(page.get_by_role("status")).to_have_text(
            "only administrators may search the whole instance"
        )
    # Alice's own page shows her private session's text as text, never as markup.
    with serving(create_app(db)) as url, new_page(browser) as page:
        page.goto(url + "/hub")
        page.get_by_label("token").fill(people.tokens["alice"])
        page.get_by_role("button", name="Sign in").click()
        page.get_by_label("query").fill("private")
        page.get_by_role("button", name="Search").click()
        expect(page.locator(".hit .snippet")).to_have_text(
            "a private rollback deploy note <b>bold</b>"
        )
        expect(page.locator(".hit b")).to_have_count(0)
