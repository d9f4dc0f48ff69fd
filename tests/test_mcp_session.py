"""The ``history_session`` MCP tool (SPEC L15): follow a hit into its session, paged and
bounded, over real stdio; its schema pinned byte for byte like ``history_search``'s."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession

from convodex.catalog.db import Catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.service import HistoryService
from convodex.errors import ConvodexError
from convodex.mcp import (
    SESSION_INPUT_SCHEMA,
    SESSION_PAGE_CHARS,
    SESSION_TOOL_NAME,
    TOOL_NAME,
    SessionTool,
    session_tool_definition,
)
from helpers import write_session
from test_mcp import SESSION, run_session, split, text_of

SNAPSHOT = Path(__file__).parent / "snapshots" / "history_session_tool.json"
SEARCH_SNAPSHOT = Path(__file__).parent / "snapshots" / "history_search_tool.json"


def test_snapshot_pins_the_session_tool() -> None:
    expected = json.dumps(session_tool_definition(), indent=2, ensure_ascii=False) + "\n"
    assert SNAPSHOT.read_bytes() == expected.encode("utf-8")
    assert list(SESSION_INPUT_SCHEMA["properties"]) == [
        "ref",
        "start",
        "before",
        "limit",
        "maxChars",
        "tools",
    ]


def test_follow_a_hit_over_stdio(root: Path, cache_dir: Path, tmp_path: Path) -> None:
    write_session(root, "deploys", SESSION, {"name": "Staging deploys"})
    # Every tool the server lists is pinned by a snapshot (the memory tools too).
    wanted = {
        json.loads(path.read_text("utf-8"))["name"]
        for path in SNAPSHOT.parent.glob("history_*_tool.json")
    }

    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        assert {t.name for t in listed.tools} == wanted
        tool = next(t for t in listed.tools if t.name == SESSION_TOOL_NAME)
        assert tool.input_schema == json.loads(SNAPSHOT.read_text("utf-8"))["inputSchema"]

        deadline = time.monotonic() + 30
        while True:
            _, found = split(text_of(await session.call_tool(TOOL_NAME, {"query": "quasar"})))
            if found["hits"]:
                break
            assert time.monotonic() < deadline, "search never found the message"
            await anyio.sleep(0.2)
        ref = found["hits"][0]["ref"]
        assert ref == "deploys#2"

        note, window = split(
            text_of(
                await session.call_tool(SESSION_TOOL_NAME, {"ref": ref, "before": 1, "limit": 2})
            )
        )
        assert note is None
        assert window["sessionId"] == "deploys" and window["title"] == "Staging deploys"
        assert window["messageCount"] == 5
        assert [m["messageIndex"] for m in window["messages"]] == [1, 2]
        assert "quasar migration" in window["messages"][1]["parts"][0]["text"]
        assert window["nextStart"] == 3

        _, rest = split(
            text_of(await session.call_tool(SESSION_TOOL_NAME, {"ref": ref, "start": 3}))
        )
        assert [m["messageIndex"] for m in rest["messages"]] == [3, 4] and "nextStart" not in rest

        bad = await session.call_tool(SESSION_TOOL_NAME, {"ref": "nobody-at-all"})
        assert bad.is_error and "no session" in text_of(bad)

    run_session(root, cache_dir, tmp_path, body)


def test_pages_are_bounded(root: Path, catalog: Catalog) -> None:
    big = "x" * 30_000
    messages: list[dict[str, Any]] = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"part {n} {big}"}
        for n in range(12)
    ]
    messages.append(
        {
            "role": "assistant",
            "content": "checking",
            "tool_calls": [{"id": "c1", "name": "bash", "arguments": '{"cmd": "ls"}'}],
        }
    )
    messages.append({"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "a.txt"})
    write_session(root, "huge", messages)
    Indexer(catalog).run([root.resolve()])
    tool = SessionTool(HistoryService(catalog, [root.resolve()], scope=[root.resolve()]))

    first = json.loads(tool.call({"ref": "huge", "limit": 50, "maxChars": 20_000}))
    sizes = [len(p["text"]) for m in first["messages"] for p in m["parts"]]
    assert first["clipped"] and max(sizes) <= 20_000
    assert sum(sizes) <= SESSION_PAGE_CHARS + 20_000
    assert first["nextStart"] == first["messages"][-1]["messageIndex"] + 1
    small = json.loads(tool.call({"ref": "huge", "limit": 3, "maxChars": 100}))
    assert [m["messageIndex"] for m in small["messages"]] == [0, 1, 2]
    assert all(len(p["text"]) <= 100 for m in small["messages"] for p in m["parts"])
    no_tools = json.loads(tool.call({"ref": "huge#13", "before": 1, "tools": False}))
    assert [m["messageIndex"] for m in no_tools["messages"]] == [12, 13]
    assert [p["kind"] for m in no_tools["messages"] for p in m["parts"]] == ["assistant_text"]

    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "history_session needs a ref"),
        ({"ref": "huge", "limit": 0}, "limit must be between 1 and 50"),
        ({"ref": "huge", "maxChars": 5}, "maxChars must be between 100 and 20000"),
        ({"ref": "huge", "tools": "yes"}, "tools must be true or false"),
        ({"ref": "huge", "page": 2}, "unknown argument: page"),
        ({"ref": "huge#99"}, "message #99 is not in the session"),
        ({"ref": "hug"}, "a prefix needs at least 6 characters"),
    ]
    for args, message in cases:
        with pytest.raises(ConvodexError, match=message):
            tool.call(args)
