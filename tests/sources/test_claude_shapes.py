"""Claude Code shapes real histories have: several Task runs in one file, another
session's records interleaved, a sub-agent file without sidechain flags, slash
commands as the first prompt, a duplicate uuid whose first record is broken."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from convodex.sources.base import Budget, ReadResult
from convodex.sources.claude_code import FORMAT
from helpers import FIXTURES, CliRun, as_json, hits, read_all, shown, write_jsonl

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


def test_a_sub_agent_run_resumes_as_the_session_it_ran_in(tmp_path: Path, cli: CliRun) -> None:
    """``convodex resume`` of a Task run printed ``claude --resume <id>:<run>``, which
    Claude Code cannot open; a sub-agent's own file cannot be resumed at all."""
    root = tmp_path / "projects"
    write_jsonl(
        root / "-work-app" / f"{SID}.jsonl",
        [
            rec("m1", None, "user", "Survey the kiwi modules"),
            rec("s1", None, "user", "Survey kiwi module one", isSidechain=True, agentId="ab12"),
            rec("s2", None, "user", "Survey kiwi module two", isSidechain=True),
            rec("m2", "m1", "assistant", "Both kiwi modules surveyed"),
        ],
    )
    write_jsonl(
        root / "-work-app" / SID / "subagents" / "agent-cd34.jsonl",
        [rec("x1", None, "user", "Explore the kiwi tree", isSidechain=True)],
    )
    as_json(cli("index", "--root", f"{root}:claude-code", "--json"))
    runs = {h["sessionId"] for h in hits(cli, "kiwi", "--include-subagents")}
    assert {f"{SID}:ab12", f"{SID}:s2", "agent-cd34"} <= runs
    for run in runs - {"agent-cd34"}:
        printed = cli("resume", run, "--print")
        assert printed.exit_code == 0, printed.stderr
        assert printed.stdout.strip().endswith(f"claude --resume {SID}"), printed.stdout
    refused = cli("resume", "agent-cd34", "--print")
    assert refused.exit_code != 0 and "cannot be resumed" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


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


EDGE = FIXTURES / "claude-code" / "claude-code-log-edge_cases.jsonl"


def test_a_broken_record_does_not_hide_the_readable_one_with_its_uuid(
    tmp_path: Path, cli: CliRun
) -> None:
    """``edge_011`` is written twice: first with ``"message":"error"``, then the real
    message; the first one stayed, so the session ended without it."""
    root = tmp_path / "projects" / "-tmp"
    root.mkdir(parents=True)
    shutil.copy(EDGE, root / EDGE.name)
    # As Claude Code names it, after its session: a rewritten uuid is not its end.
    shutil.copy(EDGE, root / "edge_cases.jsonl")
    as_json(cli("index", "--root", f"{root.parent}:claude-code", "--json"))
    found = {(h["sessionPath"], h["messageIndex"]) for h in hits(cli, "café naïve résumé")}
    assert found == {(str(root / EDGE.name), 10), (str(root / "edge_cases.jsonl"), 10)}
    for path in (root / EDGE.name, root / "edge_cases.jsonl"):
        texts = shown([m for m in read_all(FORMAT, path) if m.session_id in (None, "edge_cases")])
        assert texts[-1].startswith("Testing special characters: café, naïve, résumé")
        # The tool result written a second time with content replaces the one without.
        assert texts[-2] == "wow error"


def test_a_readable_first_record_wins_over_a_later_duplicate(tmp_path: Path) -> None:
    records = [
        rec("d1", None, "user", "the first ocelot question"),
        rec("d2", "d1", "assistant", "the ocelot answer"),
        rec("d1", None, "user", "a rewritten ocelot question"),
        {**rec("d3", "d2", "user", ""), "message": {"role": "user"}},
        rec("d3", "d2", "user", "a follow-up on the ocelot"),
        {**rec("d4", "d3", "assistant", ""), "message": "error"},
        rec("d4", "d3", "assistant", "the last ocelot answer"),
        rec("d2", "d1", "assistant", "a rewritten ocelot answer"),
    ]
    path = write_jsonl(tmp_path / f"{SID}.jsonl", records)
    expected = [
        "the first ocelot question",
        "the ocelot answer",
        "a follow-up on the ocelot",
        "the last ocelot answer",
    ]
    assert shown(read_all(FORMAT, path)) == expected
    # A file too big to keep its records decoded is read in two passes: the same.
    streamed = FORMAT.read(path, ReadResult(0, 0), Budget(max_retained_bytes=1))
    assert shown(list(streamed)) == expected
