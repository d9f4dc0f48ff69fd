"""``GET /sessions/{id}/export`` (SPEC L15) over real HTTP, and the exported HTML page
opened offline in real Chromium: readable, printable, loading nothing from anywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.sync_api import Request, expect

from helpers import FIXTURES, service, write_session
from live_server import serving, wait_for
from web.page_helpers import browser_page

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

SECRET = "sk-proj-4fJq9ZxT2mLw8RkP1vN6bY3cH7dS0aEo"
SESSION: list[dict[str, Any]] = [
    {"role": "user", "content": "Deploy <b>staging</b> with the key " + SECRET},
    {
        "role": "assistant",
        "content": "Running the deploy.",
        "tool_calls": [{"id": "c1", "name": "bash", "arguments": '{"cmd": "make deploy"}'}],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "error: exit status 2"},
    {"role": "assistant", "content": "The deploy failed; the staging host is full."},
]


def test_export_over_http(root: Path, cache_dir: Path) -> None:
    write_session(
        root, "deploy-day", SESSION, {"name": "Deploy day", "workspace_root": "/srv/shop"}
    )
    with serving(service(cache_dir, [root], listen_for_hints=False)) as client:
        wait_for(lambda: client.get("/status").json()["state"] == "complete", 20)
        found = client.get("/search", params={"q": "staging"}).json()["hits"]
        assert found and found[0]["resumeCommand"] is None  # native logs have none
        view = client.get("/sessions/deploy-day").json()
        assert view["agent"] == "session-log" and view["resumeCommand"] is None

        page = client.get("/sessions/deploy-day/export", params={"format": "html"})
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.headers["content-disposition"] == 'attachment; filename="deploy-day.html"'
        assert "default-src 'none'" in page.headers["content-security-policy"]
        assert "&lt;b&gt;staging&lt;/b&gt;" in page.text and SECRET in page.text

        md = client.get("/sessions/deploy-day/export", params={"format": "markdown", "redact": "1"})
        assert md.headers["content-type"] == "text/markdown; charset=utf-8"
        assert SECRET not in md.text and "[redacted]" in md.text
        assert "**Error** `bash`" in md.text and "exit status 2" in md.text

        data = client.get("/sessions/deploy-day/export", params={"format": "json"}).json()
        assert data["title"] == "Deploy day" and data["project"] == "/srv/shop"
        assert [m["messageIndex"] for m in data["messages"]] == [0, 1, 2, 3]

        bad = client.get("/sessions/deploy-day/export", params={"format": "pdf"})
        assert bad.status_code == 400 and "format must be one of" in bad.json()["error"]
        missing = client.get("/sessions/nobody-here/export")
        assert missing.status_code == 404 and missing.json()["ok"] is False


def test_html_export_in_chromium_offline(cli: Any, tmp_path: Path) -> None:
    ref = "55550000-0000-4000-8000-000000000001"
    cli("index", "--root", str(FIXTURES / "claude-code"), "--json")
    out = tmp_path / "export.html"
    result = cli("export", ref, "--format", "html", "-o", str(out))
    assert result.exit_code == 0, result.output
    document = json.loads(cli("export", ref, "--format", "json").stdout)
    requested: list[str] = []
    with browser_page() as page:

        def seen(request: Request) -> None:
            requested.append(request.url)

        page.on("request", seen)
        page.goto(out.as_uri())
        expect(page.locator("h1#title")).to_have_text(document["title"])
        expect(page.locator("dl.facts")).to_contain_text("claude-code")
        expect(page.locator("dl.facts")).to_contain_text("/workspace/example-app")
        expect(page.locator("article.msg")).to_have_count(document["messageCount"])
        calls = sum(p["kind"] == "tool_input" for m in document["messages"] for p in m["parts"])
        expect(page.locator("details.tool.tool_input")).to_have_count(calls)
        expect(page.locator("#m10")).to_contain_text("Both modules are surveyed")
        assert page.locator("script, link, img, iframe").count() == 0
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "export.png"), full_page=True)
        printed = page.pdf()  # printable: Chromium lays it out on paper
        assert printed.startswith(b"%PDF") and len(printed) > 10_000
    assert requested == [out.as_uri()]  # nothing but the file itself
