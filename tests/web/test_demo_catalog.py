"""The bundled demo stays a demo (issue 24 item 3): its own catalog, never the user's;
answers from it say so ("demo") in the CLI's text and JSON and on the page; and a user
catalog that recorded the demo root (older versions did) drops it on reindex and on a
plain ``convodex index``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from playwright.sync_api import expect

from convodex import config
from convodex.catalog.db import recorded_roots
from convodex.catalog.demo import DEMO_ROOT, MIXED_NOTE, NOTE
from convodex.mcp import TOOL_NAME
from helpers import CliRun, as_json, write_session
from web.page_helpers import browser_page, free_port

DEADLINE = 60.0

SESSION = [
    {"type": "user", "message": {"role": "user", "content": "rotate the signing keys"}},
]


def test_demo_indexes_into_its_own_catalog(cache_dir: Path, cli: CliRun) -> None:
    out = cli("demo")
    assert out.exit_code == 0, out.output
    assert "bundled demo corpus" in out.stdout
    assert not config.catalog_path(cache_dir).exists()
    assert recorded_roots(config.catalog_path(cache_dir / "demo")) == [DEMO_ROOT.resolve()]


def test_reindex_drops_a_recorded_demo_root(tmp_path: Path, cache_dir: Path, cli: CliRun) -> None:
    mine = tmp_path / "mine"
    write_session(mine, "mine", SESSION)
    assert cli("index", "--root", str(DEMO_ROOT), "--root", str(mine)).exit_code == 0
    out = as_json(cli("catalogs", "reindex", "history", "--json"))
    assert str(DEMO_ROOT.resolve()) not in out["roots"] and str(mine.resolve()) in out["roots"]
    assert DEMO_ROOT.resolve() not in recorded_roots(config.catalog_path(cache_dir))
    hits = as_json(cli("search", "rotate", "--json"))
    assert hits["hits"] and all("demo" not in str(h.get("path", "")) for h in hits["hits"])


def test_answers_from_the_demo_say_so(tmp_path: Path, cache_dir: Path, cli: CliRun) -> None:
    out = cli("demo")
    assert out.exit_code == 0, out.output
    assert NOTE in out.stderr  # its sample search says so
    demo = ["--cache-dir", str(cache_dir / "demo")]
    text = cli("search", "migration", *demo, cache=False)
    assert text.exit_code == 0 and "migrat" in text.stdout.lower()
    assert NOTE in text.stderr
    found = as_json(cli("search", "migration", "--json", *demo, cache=False))
    assert found["hits"] and found["progress"]["demo"] == "only"
    listed = as_json(cli("recent", "--json", *demo, cache=False))
    assert listed["sessions"] and listed["progress"]["demo"] == "only"

    # The user's own catalog: no such word anywhere.
    mine = tmp_path / "mine"
    write_session(mine, "mine", SESSION)
    assert cli("index", "--root", str(mine)).exit_code == 0
    own = cli("search", "rotate")
    assert own.exit_code == 0 and "rotate" in own.stdout and "demo" not in own.stderr
    found = as_json(cli("search", "rotate", "--json"))
    assert found["hits"] and "demo" not in found["progress"]


def test_a_plain_index_drops_a_recorded_demo_root(
    tmp_path: Path, cache_dir: Path, cli: CliRun
) -> None:
    mine = tmp_path / "mine"
    write_session(mine, "mine", SESSION)
    assert cli("index", "--root", str(DEMO_ROOT), "--root", str(mine)).exit_code == 0
    assert as_json(cli("search", "migration", "--json"))["hits"]  # the demo's, among mine
    out = cli("index")
    assert out.exit_code == 0, out.output
    assert "dropped the bundled demo corpus" in out.stdout
    known = recorded_roots(config.catalog_path(cache_dir))
    assert DEMO_ROOT.resolve() not in known and mine.resolve() in known
    assert as_json(cli("search", "migration", "--json"))["hits"] == []
    assert as_json(cli("search", "rotate", "--json"))["hits"]
    again = cli("index")  # once: nothing more to drop, nothing rebuilt
    assert again.exit_code == 0 and "dropped" not in again.stdout
    assert DEMO_ROOT.resolve() not in recorded_roots(config.catalog_path(cache_dir))


def test_the_page_says_demo(tmp_path: Path, cache_dir: Path) -> None:
    """``convodex serve`` with no sessions of yours serves the demo: the page says so."""
    port = free_port()
    argv = [sys.executable, "-m", "convodex", "serve", "--port", str(port)]
    server = subprocess.Popen(
        [*argv, "--cache-dir", str(cache_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + DEADLINE
        while True:
            assert server.poll() is None, server.communicate()
            try:
                state = httpx.get(f"{base}/status", timeout=5).json()
                if state["state"] == "complete":
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve never indexed the demo"
            time.sleep(0.05)
        assert state["demo"] == "only" and state["sentence"].startswith(NOTE)
        with browser_page() as page:
            page.goto(base + "/")
            expect(page.locator("#progress-text")).to_contain_text(NOTE)
            expect(page.locator("#progress")).to_have_attribute("data-state", "complete")
    finally:
        server.terminate()
        server.wait(DEADLINE)
        assert server.stdout is not None and server.stderr is not None
        server.stdout.close()
        server.stderr.close()


def mixed_catalog(tmp_path: Path, cli: CliRun) -> Path:
    """A user catalog an older version indexed the demo into, beside the user's own."""
    mine = tmp_path / "mine"
    write_session(mine, "mine", SESSION)
    assert cli("index", "--root", str(DEMO_ROOT), "--root", str(mine)).exit_code == 0
    return mine


def test_answers_from_a_catalog_the_demo_is_mixed_into_say_so(
    tmp_path: Path, cache_dir: Path, cli: CliRun
) -> None:
    """Until the next plain ``index`` drops it, the demo ranks among the user's own
    sessions: every answer says it is in there and how to drop it."""
    mixed_catalog(tmp_path, cli)
    text = cli("search", "rotate")
    assert text.exit_code == 0 and "rotate" in text.stdout
    assert MIXED_NOTE in text.stderr and NOTE not in text.stderr
    found = as_json(cli("search", "migration", "--json"))
    assert found["hits"] and found["progress"]["demo"] == "mixed"
    listed = as_json(cli("recent", "--json"))
    assert listed["sessions"] and listed["progress"]["demo"] == "mixed"
    assert MIXED_NOTE in cli("recent").stderr
    # Scoped to the user's own root, the answers hold no demo session: nothing to say.
    scoped = as_json(cli("search", "rotate", "--json", "--root", str(tmp_path / "mine")))
    assert scoped["hits"] and "demo" not in scoped["progress"]
    # Once a plain index has dropped it, nothing is said.
    assert cli("index").exit_code == 0
    after = cli("search", "rotate")
    assert after.exit_code == 0 and "demo" not in after.stderr


def test_status_of_a_catalog_the_demo_is_mixed_into_says_so(
    tmp_path: Path, cache_dir: Path, cli: CliRun
) -> None:
    mine = mixed_catalog(tmp_path, cli)
    port = free_port()
    argv = [sys.executable, "-m", "convodex", "serve", "--port", str(port), "--root", str(mine)]
    server = subprocess.Popen(
        [*argv, "--cache-dir", str(cache_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + DEADLINE
        while True:
            assert server.poll() is None, server.communicate()
            try:
                state = httpx.get(f"http://127.0.0.1:{port}/status", timeout=5).json()
                break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve never answered"
            time.sleep(0.05)
        assert state["demo"] == "mixed" and state["sentence"].startswith(MIXED_NOTE)
    finally:
        server.terminate()
        server.wait(DEADLINE)
        assert server.stdout is not None and server.stderr is not None
        server.stdout.close()
        server.stderr.close()


def test_mcp_answers_from_a_catalog_the_demo_is_mixed_into_say_so(
    tmp_path: Path, cache_dir: Path, cli: CliRun
) -> None:
    """The agent asking over MCP is told too: the first line of the answer."""
    mixed_catalog(tmp_path, cli)
    home = tmp_path / "empty-home"
    home.mkdir()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "convodex", "mcp", "--cache-dir", str(cache_dir)],
        env={
            "HOME": str(home),
            "CONVODEX_HOME": str(tmp_path / "home"),
            "CONVODEX_CACHE_HOME": str(tmp_path / "default-cache"),
        },
    )
    answers: list[str] = []

    async def main() -> None:
        with open(tmp_path / "mcp-stderr.txt", "w", encoding="utf-8") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                with anyio.fail_after(DEADLINE):
                    result = await session.call_tool(TOOL_NAME, {"query": "rotate"})
        assert isinstance(result.content[0], types.TextContent)
        answers.append(result.content[0].text)

    anyio.run(main)
    first, _, body = answers[0].partition("\n")
    assert first.startswith(MIXED_NOTE)
    assert json.loads(body)["hits"]
