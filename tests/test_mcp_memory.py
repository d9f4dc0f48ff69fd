"""The memory tools over real stdio with the MCP SDK's own client (SPEC L18, X11):
recent sessions, sessions that touched a file, how an error was resolved before, and
answers redacted by default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession

from convodex.catalog.service import HistoryService
from convodex.mcp_memory import ERROR_TOOL, FILE_TOOL, RECENT_TOOL, definitions
from helpers import write_session
from test_mcp import run_session, split, text_of

SNAPSHOTS = Path(__file__).parent / "snapshots"
T0 = 1_790_000_000_000
MINUTE = 60_000
KEY = "ghp_" + "Zq81" * 9
SHOP = "/home/dev/src/shop"
BLOG = "/home/dev/src/blog"


def message(role: str, text: str, at: int, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": text, "createdAt": at, **extra}


def call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def history(root: Path) -> None:
    write_session(
        root,
        "invoice-fix",
        [
            message("user", "the invoice pdf export crashes", T0),
            message(
                "assistant",
                "Editing the renderer.",
                T0 + MINUTE,
                tool_calls=[
                    call("edit", {"path": "src/billing/invoice.py", "old": "a", "new": "b"}, "c1")
                ],
            ),
            message("tool", "ok", T0 + 2 * MINUTE, tool_call_id="c1", name="edit"),
            message(
                "assistant",
                "Running the export.",
                T0 + 3 * MINUTE,
                tool_calls=[call("bash", {"cmd": "python -m shop.export"}, "c2")],
            ),
            message(
                "tool",
                "error: ModuleNotFoundError: No module named 'reportlab'",
                T0 + 4 * MINUTE,
                tool_call_id="c2",
                name="bash",
            ),
            message(
                "assistant",
                "reportlab is missing from the environment; installing it.",
                T0 + 5 * MINUTE,
                tool_calls=[call("bash", {"cmd": "pip install reportlab==4.2"}, "c3")],
            ),
            message(
                "tool",
                "Successfully installed reportlab-4.2",
                T0 + 6 * MINUTE,
                tool_call_id="c3",
                name="bash",
            ),
            message("assistant", "Installed reportlab 4.2; the export works now.", T0 + 7 * MINUTE),
        ],
        {"name": "Invoice export crash", "workspace_root": SHOP},
    )
    write_session(
        root,
        "deploy-token",
        [
            message("user", f"deploy with GITHUB_TOKEN={KEY} please", T0 + 10 * MINUTE),
            message("assistant", "Deploying the blog to staging.", T0 + 11 * MINUTE),
        ],
        {"name": "Blog deploy", "workspace_root": BLOG},
    )
    write_session(
        root,
        "invoice-talk",
        [message("user", "what should the invoice email say", T0 + 20 * MINUTE)],
        {"name": "Invoice wording", "workspace_root": SHOP},
    )


@pytest.fixture
def indexed(root: Path, cache_dir: Path) -> Path:
    history(root)
    with HistoryService.open(cache_dir, [root.resolve()]) as service:
        service.index()
    return root


def test_snapshots_pin_the_memory_tools() -> None:
    for tool in definitions():
        path = SNAPSHOTS / f"{tool['name']}_tool.json"
        expected = json.dumps(tool, indent=2, ensure_ascii=False) + "\n"
        assert path.read_text("utf-8") == expected, tool["name"]


def body_of(result: Any) -> dict[str, Any]:
    note, body = split(text_of(result))
    assert note is None and not result.is_error
    return body


def test_memory_tools_over_stdio(indexed: Path, cache_dir: Path, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert {"history_search", "history_session", RECENT_TOOL, FILE_TOOL, ERROR_TOOL} <= set(
            listed
        )
        for tool in definitions():
            assert listed[tool["name"]].input_schema == tool["inputSchema"]

        recent = body_of(await session.call_tool(RECENT_TOOL, {"project": "shop"}))
        assert [s["title"] for s in recent["sessions"]] == [
            "Invoice wording",
            "Invoice export crash",
        ]
        first = recent["sessions"][1]
        assert first["ref"] == "invoice-fix" and first["project"] == SHOP
        assert first["agent"] == "session-log" and first["messages"] == 8
        paged = body_of(await session.call_tool(RECENT_TOOL, {"limit": 1}))
        assert paged["nextStart"] == 1 and len(paged["sessions"]) == 1
        # The ref opens the session with the session tool.
        opened = body_of(await session.call_tool("history_session", {"ref": first["ref"]}))
        assert opened["title"] == "Invoice export crash"

        touched = body_of(await session.call_tool(FILE_TOOL, {"path": "billing/invoice.py"}))
        assert [s["ref"] for s in touched["sessions"]] == ["invoice-fix"]
        [moment] = touched["sessions"][0]["moments"]
        assert moment["ref"] == "invoice-fix#1" and moment["kind"] == "tool_input"
        assert moment["tool"] == "edit" and "invoice.py" in moment["snippet"]
        absolute = f"{SHOP}/src/billing/invoice.py"
        again = body_of(await session.call_tool(FILE_TOOL, {"path": absolute}))
        assert [s["ref"] for s in again["sessions"]] == ["invoice-fix"]
        none = body_of(await session.call_tool(FILE_TOOL, {"path": "src/billing/tax.py"}))
        assert none == {"sessions": []}

        fixed = body_of(
            await session.call_tool(
                ERROR_TOOL, {"error": "ModuleNotFoundError: No module named 'reportlab'"}
            )
        )
        [found] = fixed["errors"]
        assert found["error"]["ref"] == "invoice-fix#4" and found["error"]["tool"] == "bash"
        assert found["session"]["title"] == "Invoice export crash"
        then = [(t["ref"], t["role"]) for t in found["then"]]
        assert then[0] == ("invoice-fix#5", "assistant")
        assert "pip install reportlab==4.2" in found["then"][0]["text"]
        assert "works now" in found["then"][-1]["text"]
        unrelated = body_of(
            await session.call_tool(ERROR_TOOL, {"error": "TypeError: unhashable type 'dict'"})
        )
        assert unrelated == {"errors": []}

        # Redacted by default (X11): search, the session tool and the memory tools.
        hits = body_of(await session.call_tool("history_search", {"query": "GITHUB_TOKEN"}))
        assert hits["hits"] and all(KEY not in h["snippet"] for h in hits["hits"])
        assert "[redacted]" in hits["hits"][0]["snippet"]
        read = text_of(await session.call_tool("history_session", {"ref": "deploy-token"}))
        assert KEY not in read and "[redacted]" in read

        bad = await session.call_tool(FILE_TOOL, {})
        assert bad.is_error and "path is required" in text_of(bad)
        bad = await session.call_tool(RECENT_TOOL, {"limit": 500})
        assert bad.is_error and "limit must be between 1 and 50" in text_of(bad)
        seen["done"] = True

    stderr = run_session(indexed, cache_dir, tmp_path, body, "--no-index")
    assert seen == {"done": True}
    assert KEY not in stderr and "reportlab" not in stderr


def test_no_redact_answers_as_recorded(indexed: Path, cache_dir: Path, tmp_path: Path) -> None:
    seen: list[str] = []

    async def body(session: ClientSession) -> None:
        hits = body_of(await session.call_tool("history_search", {"query": "GITHUB_TOKEN"}))
        seen.append(hits["hits"][0]["snippet"])

    run_session(indexed, cache_dir, tmp_path, body, "--no-index", "--no-redact")
    assert KEY in seen[0]
