"""``convodex mcp`` over real stdio with the SDK's own client (SPEC L7, X4).

The tool's name, description, schema, defaults and parameter order are a contract
agents are prompted with: the snapshot pins them byte for byte.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from convodex.catalog.db import Catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.service import HistoryService
from convodex.errors import ConvodexError
from convodex.mcp import INPUT_SCHEMA, TOOL_NAME, HistoryTool, progress_line, tool_definition
from convodex.models import Progress
from helpers import write_session

SNAPSHOT = Path(__file__).parent / "snapshots" / "history_search_tool.json"
SECRET = "quasar"  # a query word that must never reach the server's stderr

NEW_YEAR = 1_767_225_600_000  # 2026-01-01T00:00:00Z
SESSION: list[dict[str, Any]] = [
    {"role": role, "content": text, "createdAt": NEW_YEAR + n * 60_000}
    for n, (role, text) in enumerate(
        [
            ("user", "the deploy keeps failing on the staging box"),
            ("assistant", "Let me look at the logs."),
            ("user", f"the {SECRET} migration times out after ten minutes"),
            ("assistant", "Raise the statement timeout for that migration."),
            ("user", "that fixed it, thanks"),
        ]
    )
]

Session = Callable[[ClientSession], Awaitable[None]]


def run_session(root: Path, cache: Path, home: Path, body: Session, *extra: str) -> str:
    """Spawn ``python -m convodex mcp`` and run ``body`` against it; returns its stderr."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "convodex", "mcp", "--root", str(root), "--cache-dir", str(cache), *extra],
        env={
            "CONVODEX_HOME": str(home / "home"),
            "CONVODEX_CACHE_HOME": str(home / "default-cache"),
        },
    )
    errlog = home / "mcp-stderr.txt"

    async def main() -> None:
        with open(errlog, "w", encoding="utf-8") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                with anyio.fail_after(60):
                    await body(session)

    anyio.run(main)
    return errlog.read_text("utf-8")


def text_of(result: Any) -> str:
    assert isinstance(result, types.CallToolResult)
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    return result.content[0].text


def split(text: str) -> tuple[str | None, dict[str, Any]]:
    """(the progress line or None, the JSON body)."""
    first, _, rest = text.partition("\n")
    if first.startswith("{"):
        return None, json.loads(text)
    return first, json.loads(rest)


def test_snapshot_pins_the_tool_contract() -> None:
    expected = json.dumps(tool_definition(), indent=2, ensure_ascii=False) + "\n"
    assert SNAPSHOT.read_bytes() == expected.encode("utf-8")
    assert list(INPUT_SCHEMA["properties"]) == [
        "operation",
        "query",
        "kinds",
        "limit",
        "cursor",
        "sessionPath",
        "messageIndex",
        "before",
        "after",
        "agent",
        "project",
        "since",
        "until",
        "sort",
        "group",
        "mode",
    ]


def test_list_search_and_around_over_stdio(root: Path, cache_dir: Path, tmp_path: Path) -> None:
    path = write_session(root, "deploys", SESSION, {"name": "Staging deploys"})
    snapshot = json.loads(SNAPSHOT.read_text("utf-8"))
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        tool = next(t for t in listed.tools if t.name == TOOL_NAME)
        wire = {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": tool.input_schema,
        }
        assert wire == snapshot
        assert list(tool.input_schema["properties"]) == list(snapshot["inputSchema"]["properties"])

        # The background indexer fills the catalog; results appear without a blocking scan.
        deadline = time.monotonic() + 30
        while True:
            note, body_json = split(text_of(await session.call_tool(TOOL_NAME, {"query": SECRET})))
            if note is None and body_json["hits"]:
                break
            assert time.monotonic() < deadline, "search never found the message"
            await anyio.sleep(0.2)
        assert "progress" not in body_json  # compact: only said while incomplete
        hit = body_json["hits"][0]
        assert hit["sessionPath"] == str(path)
        assert hit["messageIndex"] == 2 and hit["kind"] == "user_text"
        assert SECRET in hit["snippet"]
        assert hit["sessionTitle"] == "Staging deploys"
        assert hit["ref"] == "deploys#2" and hit["agent"] == "session-log"
        assert hit["at"] == "2026-01-01T00:02:00Z"
        # Compact: no null or false fields.
        assert None not in hit.values() and False not in hit.values()
        seen["hit"] = hit

        around = await session.call_tool(
            TOOL_NAME,
            {
                "operation": "around",
                "sessionPath": hit["sessionPath"],
                "messageIndex": hit["messageIndex"],
                "before": 1,
                "after": 1,
            },
        )
        note, context = split(text_of(around))
        assert note is None
        assert [(m["messageIndex"], m["hit"]) for m in context["messages"]] == [
            (1, False),
            (2, True),
            (3, False),
        ]
        assert "statement timeout" in context["messages"][2]["text"]

        # Bad input is a tool error the agent can read and correct, not a crash.
        bad = await session.call_tool(TOOL_NAME, {"query": SECRET, "limit": 500})
        assert bad.is_error and "limit must be between 1 and 200" in text_of(bad)
        bad = await session.call_tool(TOOL_NAME, {"operation": "delete"})
        assert bad.is_error and "operation must be" in text_of(bad)
        bad = await session.call_tool(TOOL_NAME, {"operation": "around"})
        assert bad.is_error and "sessionPath" in text_of(bad)

    stderr = run_session(root, cache_dir, tmp_path, body)
    assert seen["hit"]["messageIndex"] == 2
    assert SECRET not in stderr and "statement timeout" not in stderr


def test_incomplete_index_says_so_on_the_first_line(
    root: Path, cache_dir: Path, tmp_path: Path, catalog: Catalog
) -> None:
    write_session(root, "deploys", SESSION)
    write_session(root, "other", SESSION[:2])
    Indexer(catalog).scan_root(root.resolve())  # registered, nothing indexed yet
    catalog.close()

    async def body(session: ClientSession) -> None:
        note, result = split(text_of(await session.call_tool(TOOL_NAME, {"query": SECRET})))
        assert note == "index is still building (0/2); results may be incomplete"
        assert result["progress"]["state"] == "indexing"
        assert result["progress"]["pending"] == 2
        assert result["hits"] == []

    run_session(root, cache_dir, tmp_path, body, "--no-index")


def test_tool_defaults_and_validation(root: Path, catalog: Catalog) -> None:
    """The same HistoryTool the server runs, called directly: defaults and limits."""
    for n in range(25):
        write_session(root, f"s{n:02}", [{"role": "user", "content": f"orbit number {n}"}])
    write_session(
        root,
        "tools",
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "name": "bash", "arguments": '{"cmd": "ls"}'}],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "orbit.txt"},
        ],
    )
    Indexer(catalog).run([root.resolve()])
    tool = HistoryTool(HistoryService(catalog, [root.resolve()], scope=[root.resolve()]))

    first = json.loads(tool.call({"query": "orbit"}))
    assert len(first["hits"]) == 20 and first["nextCursor"]
    assert all(h["kind"] != "tool_output" for h in first["hits"])
    second = json.loads(tool.call({"query": "orbit", "cursor": first["nextCursor"]}))
    assert len(second["hits"]) == 5 and "nextCursor" not in second
    outputs = json.loads(tool.call({"query": "orbit", "kinds": ["tool_output"]}))
    assert [h["kind"] for h in outputs["hits"]] == ["tool_output"]

    cases: list[tuple[dict[str, Any], str]] = [
        ({"query": "orbit", "limit": 0}, "limit must be between 1 and 200"),
        ({"query": "orbit", "limit": True}, "limit must be an integer"),
        ({"query": "orbit", "kinds": "user_text"}, "kinds must be a list"),
        ({"query": "orbit", "kinds": ["bogus"]}, "unknown kind"),
        ({"query": "orbit", "colour": "red"}, "unknown argument: colour"),
        ({}, "search needs a query"),
        ({"operation": "around", "sessionPath": "x"}, "around needs messageIndex"),
        ({"operation": "around", "sessionPath": "/no/such.jsonl", "messageIndex": 0}, "unknown"),
        (
            {"operation": "around", "sessionPath": "x", "messageIndex": 0, "before": 11},
            "before must be between 0 and 10",
        ),
    ]
    for args, message in cases:
        with pytest.raises(ConvodexError, match=message):
            tool.call(args)


def test_filters_sort_and_an_empty_history(root: Path, catalog: Catalog) -> None:
    tool = HistoryTool(HistoryService(catalog, [root.resolve()], scope=[root.resolve()]))
    Indexer(catalog).run([root.resolve()])
    note, result = split(tool.call({"query": SECRET}))
    assert note == "no transcripts were found: there is nothing to search yet"
    assert result["hits"] == []
    write_session(root, "alpha", SESSION, {"workspace_root": "/srv/alpha"})
    later = [{**m, "createdAt": m["createdAt"] + 86_400_000} for m in SESSION]
    write_session(root, "beta", later, {"workspace_root": "/srv/beta"})
    Indexer(catalog).run([root.resolve()])

    def refs(**args: Any) -> list[str]:
        return [h["ref"] for h in json.loads(tool.call({"query": "migration", **args}))["hits"]]

    assert sorted(refs(project="beta", group=False)) == ["beta#2", "beta#3"]
    # Grouped (the default): the session once, its other match as a moment.
    grouped = json.loads(tool.call({"query": "migration", "project": "beta"}))
    assert grouped["grouped"] is True and len(grouped["hits"]) == 1
    [best] = grouped["hits"]
    assert best["moreHits"] == 1
    assert sorted([best["ref"], *(m["ref"] for m in best["moments"])]) == ["beta#2", "beta#3"]
    assert "grouped" not in json.loads(tool.call({"query": "migration", "group": False}))
    with pytest.raises(ConvodexError, match="group must be true or false"):
        tool.call({"query": "migration", "group": "no"})
    assert refs(sort="newest", kinds=["user_text"]) == ["beta#2", "alpha#2"]
    assert refs(sort="oldest", kinds=["user_text"]) == ["alpha#2", "beta#2"]
    assert refs(since="2026-01-02", kinds=["user_text"]) == ["beta#2"]
    assert refs(until="2026-01-01", kinds=["user_text"]) == ["alpha#2"]
    # Equal scores: their order is the sources' (ids are given newest first).
    assert sorted(refs(agent="session-log", kinds=["user_text"])) == ["alpha#2", "beta#2"]
    with pytest.raises(ConvodexError, match="unknown agent"):
        tool.call({"query": "migration", "agent": "nobody"})
    with pytest.raises(ConvodexError, match="sort must be one of"):
        tool.call({"query": "migration", "sort": "random"})


def test_progress_line() -> None:
    def at(state: Any) -> Progress:
        return Progress(state=state, indexed=3, total=7, pending=4, failed=0, revision=1)

    assert progress_line(at("complete")) is None
    assert progress_line(at("indexing")) == (
        "index is still building (3/7); results may be incomplete"
    )
    assert progress_line(at("empty")) == (
        "index is still building (3/7); results may be incomplete"
    )
    assert progress_line(at("degraded")) == (
        "index is read-only (degraded mode); results may be stale"
    )
