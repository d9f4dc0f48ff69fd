"""The native session-log reader (SPEC L1.1) on real files."""

from __future__ import annotations

import json
from pathlib import Path

from convodex.sources import session_log
from convodex.sources.base import Budget, ReadResult, SourceMessage
from convodex.sources.discover import scan
from convodex.sources.session_log import FORMAT
from helpers import write_session

BUDGET = Budget(512 << 20, 64 << 20, 64 << 20, 64 << 20)

CONVERSATION = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "why does go test fail?", "createdAt": 1767225600000},
    {
        "role": "assistant",
        "content": "Running it.",
        "tool_calls": [{"id": "c1", "name": "bash", "arguments": '{"cmd":"go test"}'}],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "error: exit status 1"},
    {"role": "tool", "tool_call_id": "c1", "content": "ok\tpkg 0.1s"},
    {"role": "user", "content": "pinned notes", "meta": True},
    {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]},
]


def read_all(path: Path, start: ReadResult | None = None) -> tuple[list[SourceMessage], ReadResult]:
    result = start or ReadResult(0, 0)
    return list(FORMAT.read(path, result, BUDGET)), result


def test_messages_documents_and_byte_locations(root: Path) -> None:
    path = write_session(root, "s1", CONVERSATION)
    messages, result = read_all(path)
    raw = path.read_bytes()
    assert [m.index for m in messages] == list(range(7))
    for m in messages:
        assert json.loads(raw[m.offset : m.offset + m.length])["role"] == m.role
    kinds = [[(d.part, d.kind) for d in m.documents] for m in messages]
    assert kinds == [
        [],  # system: not a document
        [(0, "user_text")],
        [(0, "assistant_text"), (1, "tool_input")],
        [(0, "tool_error")],
        [(0, "tool_output")],
        [],  # meta message: not a document
        [(0, "assistant_text")],
    ]
    assert messages[2].documents[1].text == 'bash {"cmd":"go test"}'
    assert messages[4].documents[0].tool_name == "bash"  # from the call id
    assert messages[1].created_at == 1767225600000
    assert result.end_offset == len(raw) and result.next_index == 7 and not result.errors


def test_malformed_lines_are_counted_not_fatal(root: Path) -> None:
    path = root / "bad.jsonl"
    path.write_bytes(
        b'{"role":"user","content":"first"}\n'
        b"{not json\n"
        b"[1, 2, 3]\n"
        b"\xff\xfe garbage bytes\n"
        b'{"content":"no role"}\n'
        b'{"role":"assistant","content":"last"}\n'
    )
    messages, result = read_all(path)
    assert [m.documents[0].text for m in messages] == ["first", "last"]
    assert [m.index for m in messages] == [0, 1]
    assert len(result.errors) == 4
    assert {e.error_class for e in result.errors} <= {
        "MalformedJSON",
        "InvalidRecord",
        "RecordError",
    }


def test_half_written_last_line_waits_for_the_writer(root: Path) -> None:
    path = root / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"done"}\n{"role":"assistant","con')
    messages, result = read_all(path)
    assert len(messages) == 1 and not result.errors
    assert result.end_offset == len(b'{"role":"user","content":"done"}\n')
    with open(path, "ab") as handle:
        handle.write(b'tent":"finished"}\n')
    more, result = read_all(path, result)
    assert [m.documents[0].text for m in more] == ["finished"]
    assert more[0].index == 1


def test_an_unterminated_but_complete_last_line_is_read(root: Path) -> None:
    path = root / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"no newline"}')
    messages, result = read_all(path)
    assert len(messages) == 1 and result.end_offset == path.stat().st_size


def test_append_reads_only_the_new_range(root: Path) -> None:
    path = write_session(root, "s1", CONVERSATION)
    _, result = read_all(path)
    before = result.bytes_read
    with open(path, "a") as handle:
        handle.write(json.dumps({"role": "user", "content": "again"}) + "\n")
    more, result = read_all(path, ReadResult(result.end_offset, result.next_index))
    assert [m.index for m in more] == [7]
    assert result.bytes_read == len(json.dumps({"role": "user", "content": "again"})) + 1
    assert before > result.bytes_read


def test_sidecars_give_title_workspace_and_parent(root: Path) -> None:
    path = write_session(
        root, "s1", CONVERSATION, {"name": "Go tests", "workspace_root": "/w", "updated_at": 5}
    )
    info = FORMAT.info(path)
    assert (info.session_id, info.title, info.workspace_root, info.subagent) == (
        "s1",
        "Go tests",
        "/w",
        False,
    )
    sub = write_session(root, "s1-sub", CONVERSATION[:2], subdir="subagents")
    (root / "subagents" / "s1-sub.meta.json").write_text(
        json.dumps({"ref": "s1-sub", "parentSession": "s1"})
    )
    info = FORMAT.info(sub)
    assert info.subagent and info.parent_id == "s1"
    archived = write_session(root, "old", CONVERSATION[:2], subdir="archive")
    assert FORMAT.info(archived).archived


def test_scan_skips_companion_logs_and_recurses(root: Path) -> None:
    write_session(root, "a", CONVERSATION, subdir="p1")
    write_session(root, "b", CONVERSATION, subdir="p1/subagents")
    write_session(root, "c", CONVERSATION, subdir="archive")
    for suffix in session_log.EXCLUDED_SUFFIXES:
        (root / "p1" / f"a{suffix}").write_text('{"role":"user","content":"x"}\n')
    (root / "notes.txt").write_text("not a transcript")
    names = sorted(d.path.relative_to(root).as_posix() for d in scan(root))
    assert names == ["archive/c.jsonl", "p1/a.jsonl", "p1/subagents/b.jsonl"]
