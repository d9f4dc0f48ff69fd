"""The real app under uvicorn and Debian's Chromium under Playwright, for the page tests.

Playwright for Python drives ``/usr/bin/chromium`` (never a downloaded browser). A missing
browser fails the test: the page is part of what CI proves.
"""

from __future__ import annotations

import socket
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from playwright.sync_api import Browser, Page, expect, sync_playwright

from convodex.web.local_app import create_app
from helpers import service as make_service

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
TIMEOUT_MS = 15_000  # generous: CI machines are busy, and every wait here ends early
DESKTOP = {"width": 1440, "height": 900}
expect.set_options(timeout=TIMEOUT_MS)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(
    roots: Path | Sequence[Path], cache_dir: Path, token: str | None = None
) -> Iterator[str]:
    """The real local app under uvicorn in a thread; yields its base URL once indexed."""
    roots = [roots] if isinstance(roots, Path) else list(roots)
    service = make_service(cache_dir, roots, listen_for_hints=False)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(service, watch=False, token=token),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="on",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        with httpx.Client(base_url=base, timeout=10, headers=headers) as client:
            while client.get("/status").json()["state"] != "complete":
                assert time.monotonic() < deadline, "indexing did not complete"
                time.sleep(0.05)
        yield base
    finally:
        server.should_exit = True
        thread.join(20)


@contextmanager
def isolated_site(
    base: Path, write_corpus: Callable[[Path], list[Path]]
) -> Iterator[tuple[str, Browser]]:
    """One indexed server and one browser for a test module, with a home of its own:
    other agents' default roots and convodex's config file hang off it, and stay empty."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HOME", str(base / "home"))
        env.setenv("CONVODEX_HOME", str(base / "convodex-home"))
        env.setenv("XDG_CONFIG_HOME", str(base / "config"))
        for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
            env.delenv(name, raising=False)
        with serving(write_corpus(base / "sessions"), base / "cache") as url, chromium() as b:
            yield url, b


@contextmanager
def chromium() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium is not installed at {CHROMIUM}: run `sudo apt-get install chromium` "
            "(or `make test` as root, which installs it)"
        )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def new_page(
    browser: Browser, width: int = 1440, height: int = 900, permissions: Sequence[str] = ()
) -> Iterator[Page]:
    """A fresh page (its own context: no state shared with other tests), with these
    browser permissions granted (e.g. ``clipboard-read`` to read back what was copied)."""
    context = browser.new_context(
        viewport={"width": width, "height": height}, permissions=list(permissions)
    )
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@contextmanager
def opened_page(
    site: tuple[str, Browser], permissions: Sequence[str] = (), allowed: Sequence[str] = ()
) -> Iterator[Page]:
    """The site's page in a fresh context; on the way out, no script error and no
    console error other than those starting with one of ``allowed``."""
    url, browser = site
    with new_page(browser, permissions=permissions) as page:
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(url + "/")
        yield page
        assert [e for e in errors if not e.startswith(tuple(allowed))] == []


@contextmanager
def browser_page() -> Iterator[Page]:
    with chromium() as browser, new_page(browser) as page:
        yield page


def screenshot(page: Page, name: str, full_page: bool = False) -> Path:
    """Saves a screenshot under tests/artifacts/ (ignored by git) to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=full_page)
    return path


def folded(text: str) -> str:
    return "".join(
        c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
    ).lower()
