"""The bundled demo stays a demo (issue 24 item 3): its own catalog, never the user's;
answers from it say so ("demo") in the CLI's text and JSON and on the page; and a user
catalog that recorded the demo root (older versions did) drops it on reindex and on a
plain ``convodex index``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
from playwright.sync_api import expect

from convodex import config
from convodex.catalog.db import recorded_roots
from convodex.catalog.demo import DEMO_ROOT, NOTE
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
    assert found["hits"] and found["progress"]["demo"] is True
    listed = as_json(cli("recent", "--json", *demo, cache=False))
    assert listed["sessions"] and listed["progress"]["demo"] is True

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
        assert state["demo"] is True and state["sentence"].startswith(NOTE)
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
