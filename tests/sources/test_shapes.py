"""Real-world shapes the readers once missed, each behind a general rule: detection by
content wherever a file sits, and a root's declared format winning over a guess."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from convodex.sources.discover import detect
from convodex.sources.registry import FORMATS
from helpers import FIXTURES, CliRun, as_json, hits, read_all, write_jsonl


def old_pi_session(path: Path) -> Path:
    """A Pi session from before version 3: a header without ``version``, entries
    without ids (read in file order)."""
    records: list[dict[str, Any]] = [
        {
            "type": "session",
            "id": "4a5b6c7d-0000-4000-8000-000000000001",
            "timestamp": "2025-08-01T10:00:00.000Z",
            "cwd": "/work/pi-project",
            "provider": "anthropic",
            "modelId": "claude-sonnet-4",
        },
        {
            "type": "message",
            "timestamp": "2025-08-01T10:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "Where is quokka?"}]},
        },
        {
            "type": "message",
            "timestamp": "2025-08-01T10:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "The quokka config is in setup.cfg."}],
            },
        },
    ]
    return write_jsonl(path, records)


def test_an_old_pi_session_is_pi_wherever_it_sits(tmp_path: Path, cli: CliRun) -> None:
    """It was taken for convodex's own log (0 messages, every line an error)."""
    path = old_pi_session(tmp_path / "anywhere" / "2025-08-01T10-00-00_4a5b6c7d.jsonl")
    assert detect(path, path.stat().st_ino, None) == "pi"
    out = as_json(cli("index", "--root", str(tmp_path / "anywhere"), "--json"))
    assert out["stats"]["failed"] == 0
    found = hits(cli, "quokka")
    assert [(h["role"], h["agent"]) for h in found] == [("user", "pi"), ("assistant", "pi")]


def test_a_declared_format_rereads_what_a_guess_misread(tmp_path: Path, cli: CliRun) -> None:
    """A Pi file without its header looks like a Droid transcript to detection; indexing
    the same unchanged folder as ``--root DIR:pi`` reads it again as Pi."""
    root = tmp_path / "copied"
    entries: list[dict[str, Any]] = [
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "2025-08-01T10:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "Find wallaby"}]},
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "a1",
            "timestamp": "2025-08-01T10:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "wallaby lives in zoo.py"}],
            },
        },
    ]
    path = write_jsonl(root / "session.jsonl", entries)
    guessed = detect(path, path.stat().st_ino, None)
    assert guessed != "pi"
    cli("index", "--root", str(root))
    cli("index", "--root", f"{root}:pi")
    assert {h["agent"] for h in hits(cli, "wallaby")} == {"pi"}
    assert len(hits(cli, "wallaby")) == 2
    cli("index", "--root", str(root))  # named by path alone: still read as declared
    assert {h["agent"] for h in hits(cli, "wallaby")} == {"pi"}


def test_a_gemini_snapshot_only_session_shows_its_messages(tmp_path: Path) -> None:
    """Gemini CLI's loader reads ``$set.messages`` snapshots first; they were ignored."""
    path = write_jsonl(
        tmp_path / "chats" / "session-2026-01-01T10-00-snap.jsonl",
        [
            {"sessionId": "snap", "projectHash": "ab12", "startTime": "2026-01-01T10:00:00Z"},
            {
                "$set": {
                    "messages": [
                        {"id": "u1", "type": "user", "content": [{"text": "Rename the numbat"}]},
                        {"id": "g1", "type": "gemini", "content": "Renamed numbat to bilby."},
                    ]
                }
            },
            {"id": "u2", "type": "user", "content": [{"text": "Thanks, numbat is gone"}]},
        ],
    )
    messages = read_all(FORMATS["gemini"], path)
    assert [(m.role, m.text()) for m in messages] == [
        ("user", "Rename the numbat"),
        ("assistant", "Renamed numbat to bilby."),
        ("user", "Thanks, numbat is gone"),
    ]


def test_codex_payloads_without_a_message_type_are_messages(tmp_path: Path) -> None:
    """A ``response_item`` payload with a role and no ``type`` (the Responses API's
    short form, which other tools write) was dropped silently."""
    path = write_jsonl(
        tmp_path / "rollout-2026-01-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl",
        [
            {"type": "session_meta", "payload": {"id": "0199aaaa", "cwd": "/w"}},
            {
                "type": "response_item",
                "timestamp": "2026-01-01T10:00:01Z",
                "payload": {
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Is the echidna test flaky?"}],
                },
            },
            {
                "type": "response_item",
                "timestamp": "2026-01-01T10:00:02Z",
                "payload": {
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Yes, the echidna test races."}],
                },
            },
        ],
    )
    messages = read_all(FORMATS["codex"], path)
    assert [(m.role, m.text()) for m in messages] == [
        ("user", "Is the echidna test flaky?"),
        ("assistant", "Yes, the echidna test races."),
    ]


def test_copilot_chat_answers_keep_their_inline_file_references(tmp_path: Path) -> None:
    """The Chat view renders an inline reference inside the prose; it was dropped,
    leaving "Let me check the ⏎ to see"."""
    session = {
        "version": 3,
        "sessionId": "inline-1",
        "requests": [
            {
                "timestamp": 1767261600000,
                "message": {"text": "Why does the build fail?"},
                "response": [
                    {"kind": "markdownContent", "value": "Let me check the "},
                    {
                        "kind": "inlineReference",
                        "inlineReference": {
                            "$mid": 1,
                            "path": "/w/src/build_config.py",
                            "scheme": "file",
                        },
                    },
                    {"kind": "markdownContent", "value": " to see."},
                ],
            }
        ],
    }
    path = tmp_path / "chatSessions" / "inline-1.json"
    path.parent.mkdir()
    path.write_text(json.dumps(session), "utf-8")
    messages = read_all(FORMATS["copilot_vscode"], path)
    assert [m.text() for m in messages] == [
        "Why does the build fail?",
        "Let me check the build_config.py to see.",
    ]


def test_an_opencode_message_with_an_iso_time_is_kept(tmp_path: Path) -> None:
    """Some writers store ``time.created`` as an ISO 8601 string: the message was
    dropped whole."""
    tree = tmp_path / "storage"
    shutil.copytree(FIXTURES / "opencode" / "agent-sessions" / "storage_v2", tree)
    first = tree / "message" / "s_stage0_small" / "msg_0001.json"
    info = json.loads(first.read_text("utf-8"))
    info["time"]["created"] = "2024-10-27T03:33:21.000Z"
    first.write_text(json.dumps(info), "utf-8")
    messages = read_all(
        FORMATS["opencode"], tree / "session" / "proj_test" / "ses_s_stage0_small.json"
    )
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[0].text() == "Hello"
    assert messages[0].created_at == 1730000001000


def test_claude_ai_blocks_of_an_unknown_type_keep_their_text(tmp_path: Path) -> None:
    """Claude.ai adds content-block types; a message made only of unknown ones indexed
    nothing."""
    export = [
        {
            "uuid": "conv-1",
            "name": "Cassowary facts",
            "created_at": "2026-01-01T10:00:00Z",
            "chat_messages": [
                {
                    "uuid": "m1",
                    "sender": "human",
                    "created_at": "2026-01-01T10:00:00Z",
                    "content": [{"type": "text", "text": "Tell me about cassowaries"}],
                },
                {
                    "uuid": "m2",
                    "parent_message_uuid": "m1",
                    "sender": "assistant",
                    "created_at": "2026-01-01T10:00:05Z",
                    "content": [
                        {
                            "type": "knowledge_card",
                            "title": "Bird",
                            "text": "Cassowaries cannot fly.",
                        }
                    ],
                },
            ],
        }
    ]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export), "utf-8")
    messages = read_all(FORMATS["chat_export"], path)
    assert [(m.role, m.text()) for m in messages] == [
        ("user", "Tell me about cassowaries"),
        ("assistant", "Cassowaries cannot fly."),
    ]
