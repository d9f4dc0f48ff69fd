"""Issue 12, item 9: MCP ``around`` reads only sessions under the server's ``--root``.

Two roots share one catalog; an agent given ``convodex mcp --root A`` must not read a
session of root B by naming its path, however it learned it.
"""

from __future__ import annotations

from pathlib import Path

from mcp.client.session import ClientSession

from convodex.mcp import TOOL_NAME
from helpers import write_session
from local_faults import convodex, ok_json
from test_mcp import run_session, split, text_of


def test_around_refuses_sessions_of_other_roots(tmp_path: Path, cache_dir: Path) -> None:
    mine = write_session(tmp_path / "a", "mine", [{"role": "user", "content": "walrus mine"}])
    theirs = write_session(
        tmp_path / "b", "theirs", [{"role": "user", "content": "walrus private plans"}]
    )
    both = ("--root", str(tmp_path / "a"), "--root", str(tmp_path / "b"))
    ok_json(convodex("index", "--json", *both, "--cache-dir", str(cache_dir)))
    seen: dict[str, str] = {}

    async def body(session: ClientSession) -> None:
        around = {"operation": "around", "messageIndex": 0}
        own = await session.call_tool(TOOL_NAME, {**around, "sessionPath": str(mine)})
        assert not own.is_error
        _, context = split(text_of(own))
        assert [m["text"] for m in context["messages"]] == ["walrus mine"]
        other = await session.call_tool(TOOL_NAME, {**around, "sessionPath": str(theirs)})
        seen["other"] = text_of(other)
        assert other.is_error
        searched = await session.call_tool(TOOL_NAME, {"query": "walrus"})
        _, page = split(text_of(searched))
        assert [h["sessionPath"] for h in page["hits"]] == [str(mine)]

    run_session(tmp_path / "a", cache_dir, tmp_path, body, "--no-index")
    assert "unknown session" in seen["other"]
    assert "private plans" not in seen["other"]
