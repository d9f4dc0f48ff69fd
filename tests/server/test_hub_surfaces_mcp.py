"""Issue 29: ``history_search`` over MCP asks the hub too (SPEC S6). Bob's box runs the
real ``convodex mcp``, spoken to through the MCP SDK's client: the hub's hits come
beside the local ones, marked with machine and owner and masked as every answer to an
agent is; an unreachable hub is one line and the local answer stands. The account
token never reaches the agent or the server's stderr."""

from __future__ import annotations

import sys
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from server.hub_machines import LOCAL_NOTE, NOWHERE, SHOWN, SQLITE, UNREACHABLE, Machine, Team
from test_mcp import split, text_of


def _history_search(machine: Machine, arguments: dict[str, Any]) -> tuple[str, str]:
    """One ``history_search`` call to the machine's ``convodex mcp`` over stdio, through
    the SDK's client: (the tool's text, the server's stderr)."""
    index = machine.run("index", "--root", str(machine.sessions))
    assert index.returncode == 0, index.stderr
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "convodex", "mcp", "--root", str(machine.sessions), "--no-index"],
        env=machine.env(),
    )
    errlog = machine.home / "mcp-stderr.txt"
    texts: list[str] = []

    async def main() -> None:
        with open(errlog, "w", encoding="utf-8") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                with anyio.fail_after(60):
                    texts.append(text_of(await session.call_tool("history_search", arguments)))

    anyio.run(main)
    return texts[0], errlog.read_text("utf-8")


@SQLITE
def test_mcp_search_answers_hub_hits_masked_beside_local_ones(team: Team) -> None:
    text, stderr = _history_search(team.box, {"query": "rollback deploy"})
    _, body = split(text)
    assert [h["snippet"] for h in body["hits"]] == [LOCAL_NOTE]
    hub = body["hub"]
    assert hub["hub"] == team.hub and "error" not in hub
    assert {
        f"{h['machine']} · {h['agent'].replace('_', '-')} · {h['ownerId']}" for h in hub["hits"]
    } == team.where
    laptop_hit = next(h for h in hub["hits"] if h["machine"] == "laptop")
    assert laptop_hit["snippet"].startswith("rollback the deploy with token ")
    assert SHOWN not in text  # the laptop shared it as is; an agent reads it masked
    assert team.bob_token not in text + stderr
    assert "rollback" not in stderr  # queries never reach diagnostics


@SQLITE
def test_mcp_search_with_an_unreachable_hub_answers_locally(team: Team) -> None:
    team.box.configure(NOWHERE, team.bob_token)
    text, stderr = _history_search(team.box, {"query": "rollback deploy"})
    _, body = split(text)
    assert [h["snippet"] for h in body["hits"]] == [LOCAL_NOTE]
    assert body["hub"] == {"hub": NOWHERE, "error": UNREACHABLE}
    assert team.bob_token not in text + stderr
