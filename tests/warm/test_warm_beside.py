"""``convodex mcp`` and the web app's service answer short commands too (SPEC L20), and
the agent tool over stdio keeps working beside them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from starlette.testclient import TestClient

from convodex.catalog.plan import SearchRequest
from convodex.catalog.service import HistoryService
from convodex.cli.warm import beside
from convodex.models import SearchPage
from convodex.warm import client
from convodex.warm.daemon import status
from convodex.web.local_app import create_app
from warm.conftest import convodex


def test_the_web_apps_service_answers_short_commands(
    history: HistoryService, cache_dir: Path
) -> None:
    request = SearchRequest(query="keys")
    assert client.call(cache_dir, "search", request, SearchPage) is None
    fresh = HistoryService.open(cache_dir, history.roots)
    with TestClient(create_app(fresh, watch=False, beside=beside)):
        page = client.call(cache_dir, "search", request, SearchPage)
        assert page is not None and page.hits
    assert client.call(cache_dir, "search", request, SearchPage) is None  # gone with it


def test_the_mcp_process_answers_short_commands(
    history: HistoryService, cache_dir: Path, tmp_path: Path
) -> None:
    expected = convodex("search", "keys", "--json", "--cache-dir", str(cache_dir)).stdout
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "convodex", "mcp", "--cache-dir", str(cache_dir)],
        env=dict(os.environ),
    )

    def served() -> int | None:
        state = status(cache_dir)
        return None if state is None else state.served

    async def main() -> None:
        with open(tmp_path / "mcp-stderr.txt", "w", encoding="utf-8") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                with anyio.fail_after(60):
                    while await anyio.to_thread.run_sync(served) is None:
                        await anyio.sleep(0.02)
                    found = await anyio.to_thread.run_sync(
                        lambda: convodex("search", "keys", "--json", "--cache-dir", str(cache_dir))
                    )
                    assert found.returncode == 0 and found.stdout == expected
                    assert await anyio.to_thread.run_sync(served) == 1
                    result = await session.call_tool(
                        "history_search", {"operation": "search", "query": "keys"}
                    )
                    text = result.content[0].text  # type: ignore[union-attr]
                    assert json.loads(text[text.index("{") :])["hits"]

    anyio.run(main)
