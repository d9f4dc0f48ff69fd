"""Claude Code shapes real histories have: several Task runs in one file, another
session's records interleaved, a sub-agent file without sidechain flags, slash
commands as the first prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from convodex.sources.claude_code import FORMAT
from helpers import CliRun, as_json, hits, read_all, write_jsonl

SID = "5e55a000-0000-4000-8000-000000000001"
OTHER = "5e55a000-0000-4000-8000-000000000002"


def rec(uuid: str, parent: str | None, kind: str, text: str, **extra: Any) -> dict[str, Any]:
    role = "user" if kind == "user" else "assistant"
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": extra.pop("sessionId", SID),
        "timestamp": f"2026-03-01T10:{len(uuid) % 60:02d}:00.000Z",
        "cwd": "/work/app",
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
        **extra,
    }


def test_each_task_run_is_a_sub_agent_session_of_its_own(tmp_path: Path) -> None:
    """Five Task runs were merged into one "sub-agent (sidechain)" session."""
    records = [
        rec("m1", None, "user", "Audit the five modules"),
        rec("m2", "m1", "assistant", "On it"),
    ]
    for n in range(5):
        records += [
            rec(f"s{n}a", None, "user", f"Audit module {n}", isSidechain=True),
            rec(f"s{n}b", f"s{n}a", "assistant", f"Module {n} is fine", isSidechain=True),
        ]
    records.append(rec("m3", "m2", "assistant", "All five audited"))
    path = write_jsonl(tmp_path / f"{SID}.jsonl", records)
    messages = read_all(FORMAT, path)
    main = [m for m in messages if not m.subagent]
    assert [m.text() for m in main] == ["Audit the five modules", "On it", "All five audited"]
    runs: dict[str | None, list[str]] = {}
    for m in messages:
        if m.subagent:
            runs.setdefault(m.session_id, []).append(m.text())
    assert sorted(runs.values()) == [[f"Audit module {n}", f"Module {n} is fine"] for n in range(5)]
    assert all(sid and sid.startswith(f"{SID}:") for sid in runs)


def test_another_sessions_records_do_not_cut_this_one(tmp_path: Path) -> None:
    """Records of another session written into the file ended the main session at the
    last of them (4 of 6 messages shown)."""
    records = [
        rec("a1", None, "user", "first question"),
        rec("a2", "a1", "assistant", "first answer"),
        rec("a3", "a2", "user", "second question"),
        rec("a4", "a3", "assistant", "second answer"),
        rec("o1", None, "user", "a question of another session", sessionId=OTHER),
        rec("a5", "a4", "user", "third question"),
        rec("a6", "a5", "assistant", "third answer"),
        rec("o2", "o1", "assistant", "an answer of another session", sessionId=OTHER),
    ]
    path = write_jsonl(tmp_path / f"{SID}.jsonl", records)
    texts = [m.text() for m in read_all(FORMAT, path) if not m.subagent]
    assert texts == [
        "first question",
        "first answer",
        "second question",
        "second answer",
        "third question",
        "third answer",
    ]


def test_a_subagent_file_without_sidechain_flags_is_read(tmp_path: Path) -> None:
    """``subagents/agent-*.jsonl`` whose records lack ``isSidechain`` gave 0 messages."""
    path = write_jsonl(
        tmp_path / SID / "subagents" / "agent-a1b2c3.jsonl",
        [rec("x1", None, "user", "Find the pangolin"), rec("x2", "x1", "assistant", "pangolin.py")],
    )
    assert [m.text() for m in read_all(FORMAT, path)] == ["Find the pangolin", "pangolin.py"]
    assert FORMAT.info(path).subagent


def test_a_slash_command_is_shown_as_typed(tmp_path: Path, cli: CliRun) -> None:
    """The raw markup Claude Code records a slash command in became the title."""
    markup = (
        "<command-message>review is running…</command-message>\n"
        "<command-name>/review</command-name>\n<command-args>src/tapir.py</command-args>"
    )
    root = tmp_path / "projects"
    write_jsonl(
        root / "-work-app" / f"{SID}.jsonl",
        [rec("c1", None, "user", markup), rec("c2", "c1", "assistant", "tapir looks fine")],
    )
    as_json(cli("index", "--root", f"{root}:claude-code", "--json"))
    (found,) = hits(cli, "tapir", "--kind", "assistant_text")
    assert found["sessionTitle"] == "/review src/tapir.py"
