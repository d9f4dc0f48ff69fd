"""Format drift in the readers of typed records beyond the first four (``test_drift``):
each knows its agent's record and part types, counts any other per source for
``doctor catalogs`` (names only), and keeps an unknown record's or part's text
searchable where it has text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from convodex.sqlite import sqlite3
from helpers import (
    FIXTURES,
    CliRun,
    as_json,
    bubble,
    hits,
    write_jsonl,
    write_session,
    write_vscdb,
)


def drift(cli: CliRun, *roots: str) -> dict[tuple[str, str, str], int]:
    """Index ``roots`` and return doctor's unknown shapes: (format, kind, name) → count."""
    out = as_json(cli("index", *[a for r in roots for a in ("--root", r)], "--json"))
    assert out["stats"]["failed"] == 0
    report = as_json(cli("doctor", "catalogs", "--json"))["catalogs"][0]
    assert "privatewords" not in json.dumps(report)  # names and counts, never content
    return {(s["format"], s["kind"], s["name"]): s["count"] for s in report["unknownShapes"]}


def test_session_log_counts_unknown_roles_and_parts(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "sessions"
    write_session(
        root,
        "native-drift",
        [
            {"role": "user", "content": "what do wombats eat"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Grass."},
                    {"type": "hologram", "text": "quollspark glows"},
                ],
            },
            {"role": "narrator", "content": "numbatlantern hums"},
            {"role": "oracle", "mood": "privatewords"},
        ],
    )
    shapes = drift(cli, f"{root}:session_log")
    assert shapes == {
        ("session_log", "block", "hologram"): 1,
        ("session_log", "record", "narrator"): 1,
        ("session_log", "record", "oracle"): 1,
    }
    for word in ("quollspark", "numbatlantern"):
        assert len(hits(cli, word)) == 1, word


def test_copilot_cli_counts_unknown_event_types(tmp_path: Path, cli: CliRun) -> None:
    at = "2026-01-01T10:00:00.000Z"

    def event(kind: str, **data: Any) -> dict[str, Any]:
        return {"type": kind, "data": data, "id": kind, "timestamp": at, "parentId": None}

    root = tmp_path / "session-state"
    write_jsonl(
        root / "c0ffee00-0000-4000-8000-00000000d71f" / "events.jsonl",
        [
            event("session.start", sessionId="c0ffee00", startTime=at, context={"cwd": "/w"}),
            event("user.message", content="where do bilbies sleep"),
            event("assistant.turn_start", turnId="0"),
            event("assistant.message", content="In burrows.", messageId="m1"),
            event("assistant.hologram", content="dunnartember flickers"),
            event("session.hologram_sync", mood="privatewords"),
        ],
    )
    shapes = drift(cli, f"{root}:copilot_cli")
    assert shapes == {
        ("copilot_cli", "record", "assistant.hologram"): 1,
        ("copilot_cli", "record", "session.hologram_sync"): 1,
    }
    (hit,) = hits(cli, "dunnartember")
    assert hit["role"] == "assistant"


def test_copilot_vscode_counts_unknown_response_parts_and_ops(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "workspaceStorage" / "0b7d"
    request = {
        "requestId": "r1",
        "timestamp": 1767261600000,
        "message": {"text": "how far do emus run"},
        "response": [
            {"kind": "markdownContent", "value": "Far. "},
            {"kind": "hologramCard", "value": "cassowaryflint sprints"},
            {"kind": "undoStop", "id": "privatewords"},
        ],
    }
    state = {"version": 3, "sessionId": "v-drift", "creationDate": 1767261600000, "requests": []}
    write_jsonl(
        root / "chatSessions" / "v-drift.jsonl",
        [
            {"kind": 0, "v": state},
            {"kind": 2, "k": ["requests"], "v": [request]},
            {"kind": 7, "k": ["mood"], "v": "privatewords"},
        ],
    )
    shapes = drift(cli, f"{root}:copilot_vscode")
    assert shapes == {
        ("copilot_vscode", "block", "hologramCard"): 1,
        ("copilot_vscode", "record", "op.7"): 1,
    }
    (hit,) = hits(cli, "cassowaryflint")
    assert hit["role"] == "assistant"


def test_opencode_counts_unknown_roles_and_part_types(tmp_path: Path, cli: CliRun) -> None:
    storage = tmp_path / "opencode" / "storage"
    at = 1767261600000

    def put(path: Path, value: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), "utf-8")

    put(
        storage / "session" / "proj_1" / "ses_drift.json",
        {"id": "ses_drift", "title": "drift", "directory": "/w", "time": {"created": at}},
    )
    messages = [
        ("msg_1", "user", [{"type": "text", "text": "do possums climb"}]),
        (
            "msg_2",
            "assistant",
            [
                {"type": "step-start"},
                {"type": "text", "text": "Yes."},
                {"type": "hologram", "text": "sugarglider drifts"},
            ],
        ),
        ("msg_3", "narrator", [{"type": "text", "text": "potoroo whispers"}]),
    ]
    for n, (mid, role, parts) in enumerate(messages):
        info = {"id": mid, "sessionID": "ses_drift", "role": role, "time": {"created": at + n}}
        put(storage / "message" / "ses_drift" / f"{mid}.json", info)
        for p, part in enumerate(parts):
            body = {"id": f"prt_{mid}_{p}", "sessionID": "ses_drift", "messageID": mid, **part}
            put(storage / "part" / mid / f"prt_{mid}_{p}.json", body)
    shapes = drift(cli, f"{storage.parent}:opencode")
    assert shapes == {
        ("opencode", "block", "hologram"): 1,
        ("opencode", "record", "narrator"): 1,
    }
    for word in ("sugarglider", "potoroo"):
        assert len(hits(cli, word)) == 1, word


def test_zed_counts_unknown_message_and_part_variants(tmp_path: Path, cli: CliRun) -> None:
    store = tmp_path / "zed" / "threads" / "threads.db"
    store.parent.mkdir(parents=True)
    thread = {
        "version": "0.3.0",
        "title": "zed drift",
        "messages": [
            {"User": {"id": "u1", "content": [{"Text": "do lyrebirds mimic"}, {"Sticker": "x"}]}},
            {
                "Agent": {
                    "content": [
                        {"Text": "They do."},
                        {"Citation": {"text": "bowerbirdgleam collects"}},
                    ],
                    "tool_results": {},
                }
            },
            {"Narrator": {"content": [{"Text": "kookaburrachime laughs"}]}},
            "Resume",
        ],
    }
    db = sqlite3.connect(store)
    db.executescript((FIXTURES / "zed" / "deja-vu-zed.sql").read_text("utf-8"))
    db.execute(
        "insert into threads (id, summary, updated_at, data_type, data)"
        " values ('zed-drift', 'zed drift', '2026-07-19T10:00:02+00:00', 'json', ?)",
        (json.dumps(thread).encode(),),
    )
    db.commit()
    db.close()
    shapes = drift(cli, f"{store.parent}:zed")
    assert shapes == {
        ("zed", "block", "Sticker"): 1,
        ("zed", "block", "Citation"): 1,
        ("zed", "record", "Narrator"): 1,
    }
    for word in ("bowerbirdgleam", "kookaburrachime"):
        assert len(hits(cli, word)) == 1, word


def test_cursor_transcript_counts_unknown_blocks_roles_and_lines(
    tmp_path: Path, cli: CliRun
) -> None:
    """The public schema-drift sample's ``custom_block`` is counted and its words found."""
    folder = tmp_path / "projects" / "home-dev-app" / "agent-transcripts"
    folder.mkdir(parents=True)
    sample = (FIXTURES / "cursor" / "agent-sessions-schema_drift.jsonl").read_bytes()
    more = [
        {"role": "narrator", "message": {"content": [{"type": "text", "text": "galahwhirl"}]}},
        {"type": "turn_ended", "status": "success"},
        {"type": "hologram_marker", "mood": "privatewords"},
    ]
    lines = "".join(json.dumps(line) + "\n" for line in more)
    (folder / "c-drift.jsonl").write_bytes(sample + lines.encode())
    shapes = drift(cli, f"{tmp_path / 'projects'}:cursor")
    assert shapes == {
        ("cursor", "block", "custom_block"): 1,
        ("cursor", "record", "narrator"): 1,
        ("cursor", "record", "hologram_marker"): 1,
    }
    assert len(hits(cli, "unknown block with visible text")) == 1
    assert len(hits(cli, "galahwhirl")) == 1


def test_cursor_editor_counts_unknown_bubble_types(tmp_path: Path, cli: CliRun) -> None:
    path = tmp_path / "globalStorage" / "state.vscdb"
    write_vscdb(path)
    composer = {
        "composerId": "comp-9",
        "name": "drift",
        "conversation": [bubble(1, "do dingoes howl"), bubble(7, "thylacinemirage fades")],
    }
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "INSERT INTO cursorDiskKV VALUES ('composerData:comp-9', ?)", (json.dumps(composer),)
        )
    db.close()
    shapes = drift(cli, f"{path.parent}:cursor_ide")
    assert shapes == {("cursor_ide", "record", "bubble.7"): 1}
    assert len(hits(cli, "thylacinemirage")) == 1
