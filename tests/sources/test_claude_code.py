"""Claude Code: a file holding several sessions reports each message's own session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from convodex.sources.claude_code import FORMAT
from convodex.sources.discover import FORMATS
from helpers import hits, read_all, write_jsonl

EARLIER = "11111111-aaaa-4000-8000-000000000001"
RESUMED = "22222222-bbbb-4000-8000-000000000002"


def line(uuid: str, parent: str | None, kind: str, session: str, text: str) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": session,
        "timestamp": "2026-01-01T00:00:00Z",
        "cwd": "/srv/app",
        "message": {"role": kind, "content": text},
    }


def resumed_file(folder: Path) -> Path:
    """`claude --resume` carries the earlier session's messages into the new file."""
    return write_jsonl(
        folder / f"{RESUMED}.jsonl",
        [
            line("u1", None, "user", EARLIER, "first question about the kumquat"),
            line("a1", "u1", "assistant", EARLIER, "kumquat answer"),
            line("u2", "a1", "user", RESUMED, "follow-up on the kumquat"),
            line("a2", "u2", "assistant", RESUMED, "resumed kumquat answer"),
        ],
    )


def test_messages_report_the_session_their_records_name(tmp_path: Path) -> None:
    messages = read_all(FORMAT, resumed_file(tmp_path))
    assert [m.session_id for m in messages] == [EARLIER, EARLIER, None, None]
    assert FORMAT.info(tmp_path / f"{RESUMED}.jsonl").session_id == RESUMED


def test_search_names_each_session(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    project = Path.home() / ".claude" / "projects" / "-work-app"
    resumed_file(project)
    cli("index", "--json")
    found = {h["messageIndex"]: h["sessionId"] for h in hits(cli, "kumquat")}
    assert found == {0: EARLIER, 1: EARLIER, 2: RESUMED, 3: RESUMED}


def test_agent_name_and_resume_template() -> None:
    assert FORMATS["claude_code"] is FORMAT
    assert FORMAT.resume == "claude --resume {id}"
    assert [FORMATS[n].resume for n in ("codex", "gemini")] == [
        "codex resume {id}",
        "gemini --resume {id}",
    ]
    assert [FORMATS[n].resume for n in ("session_log", "dag", "chat_export")] == [None] * 3
