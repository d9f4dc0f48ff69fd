"""Claude Code: a file holding several sessions reports each message's own session;
a session's own title is found in its file, and the catalog keeps where."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from convodex.sources.base import Budget, ReadResult, SessionInfo
from convodex.sources.claude_code import FORMAT
from convodex.sources.discover import FORMATS
from helpers import CliRun, hits, read_all, write_jsonl

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


def titled_file(folder: Path, *titles: tuple[str, str]) -> Path:
    """A session whose records include (kind, title) title records, in order."""
    records: list[dict[str, Any]] = [line("u1", None, "user", RESUMED, "quince question")]
    for kind, title in titles:
        key = "summary" if kind == "summary" else "customTitle"
        records.append({"type": kind, key: title, "sessionId": RESUMED})
    records.append(line("a1", "u1", "assistant", RESUMED, "quince answer"))
    return write_jsonl(folder / f"{RESUMED}.jsonl", records)


def test_info_places_the_record_its_title_comes_from(tmp_path: Path) -> None:
    path = titled_file(tmp_path, ("summary", "Old summary"), ("custom-title", "Named by hand"))
    info = FORMAT.info(path)
    assert info.title == "Named by hand" and info.title_located
    assert info.title_span is not None
    assert FORMAT.title_at(path, *info.title_span) == "Named by hand"
    offset, length = info.title_span
    assert b"Named by hand" in path.read_bytes()[offset : offset + length]

    untitled = FORMAT.info(titled_file(tmp_path / "plain"))
    assert untitled.title is None and untitled.title_located and untitled.title_span is None

    # A sub-agent without a title of its own takes its meta sidecar's: not placed.
    sub = titled_file(tmp_path / "s" / "subagents")
    sub.with_suffix(".meta.json").write_text('{"description": "Explore the repo"}')
    info = FORMAT.info(sub)
    assert info.title == "Explore the repo" and not info.title_located


def test_a_hit_reads_its_title_from_the_placed_record(
    cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = Path.home() / ".claude" / "projects" / "-work-app"
    path = titled_file(project, ("summary", "Quince planning"))
    plain = titled_file(project / "other")  # a second session, no title of its own
    scans: list[Path] = []
    scan = FORMAT.info

    def counted(where: Path) -> SessionInfo:
        scans.append(where)
        return scan(where)

    cli("index", "--json")
    monkeypatch.setattr(FORMAT, "info", counted)
    titles = {Path(h["sessionPath"]): h["sessionTitle"] for h in hits(cli, "quince")}
    assert titles == {path: "Quince planning", plain: "quince question"}
    assert scans == []  # the catalog knew where each title is, or that there is none

    # Renamed since indexing: the file is not as indexed, so it is scanned again.
    with path.open("a") as handle:
        handle.write('{"type": "custom-title", "customTitle": "Quince launch"}\n')
    titles = {Path(h["sessionPath"]): h["sessionTitle"] for h in hits(cli, "quince")}
    assert titles[path] == "Quince launch" and scans == [path]
    # A warm process keeps the title for the file as it is now: not scanned again.
    titles = {Path(h["sessionPath"]): h["sessionTitle"] for h in hits(cli, "quince")}
    assert titles[path] == "Quince launch" and scans == [path]


def test_every_fixture_s_placed_title_is_its_scanned_title() -> None:
    fixtures = sorted((Path(__file__).parent.parent / "fixtures" / "claude-code").rglob("*.jsonl"))
    assert len(fixtures) >= 6
    placed = 0
    for path in fixtures:
        info = FORMAT.info(path)
        if not info.title_located:
            continue
        if info.title_span is None:
            assert info.title is None, path
        else:
            assert FORMAT.title_at(path, *info.title_span) == info.title, path
            placed += 1
    assert placed >= 1  # the fixtures hold real summary records


def test_abandoned_branches_are_read_only_when_asked(tmp_path: Path) -> None:
    """Rewinds nest: the turns each one left are a branch naming the message it
    continues (the effective branch's, or an earlier branch's); reading with the
    branches gives the same messages as a plain read, which never holds them."""
    sid = "33333333-cccc-4000-8000-000000000003"
    path = write_jsonl(
        tmp_path / f"{sid}.jsonl",
        [
            line("u1", None, "user", sid, "start"),
            line("a1", "u1", "assistant", sid, "ready"),
            line("u2", "a1", "user", sid, "first try"),
            line("a2", "u2", "assistant", sid, "first answer"),
            line("u3", "a2", "user", sid, "deeper try"),
            line("u2b", "a1", "user", sid, "second try"),  # a rewind to "ready"
            line("a2b", "u2b", "assistant", sid, "second answer"),
            line("u3x", "a2", "user", sid, "another deeper try"),  # a rewind to "first answer"
            line("u3b", "a2b", "user", sid, "kept going"),
        ],
    )
    plain = list(FORMAT.read(path, ReadResult(0, 0), Budget.from_env()))
    messages, branches = FORMAT.read_with_branches(path, ReadResult(0, 0), Budget.from_env())
    assert [(m.index, m.offset, m.text()) for m in messages] == [
        (m.index, m.offset, m.text()) for m in plain
    ]
    assert [m.text() for m in plain] == [
        "start",
        "ready",
        "second try",
        "second answer",
        "kept going",
    ]
    offsets = {m.text(): m.offset for m in plain}
    found = [(b.after, [m.text() for m in b.messages]) for b in branches]
    first = branches[0].messages[1].offset  # "first answer", on the first branch
    assert found == [
        (offsets["ready"], ["first try", "first answer", "deeper try"]),
        (first, ["another deeper try"]),
    ]
    # Branch messages have indexes of their own, after the effective ones.
    assert [m.index for b in branches for m in b.messages] == [5, 6, 7, 8]
