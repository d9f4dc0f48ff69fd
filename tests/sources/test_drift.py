"""Format drift: a file a reader claims but finds no message in is counted per format
by ``doctor``, and so are record and content-block types a reader does not know, so
the next unknown shape shows there and not as a missing hit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from helpers import FIXTURES, CliRun, as_json, hits, write_jsonl

KIRO = FIXTURES / "kiro" / "irrlicht" / "2-2_auto-executed-tool-call" / "transcript.jsonl"


def test_doctor_counts_claimed_sources_with_no_messages(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "cli"
    root.mkdir()
    shutil.copy(KIRO, root / "known.jsonl")
    # A later version's records, none of a kind the reader knows: read, no message.
    (root / "future.jsonl").write_text(
        '{"version":"v2","kind":"Thought","data":{"text":"kinds to come"}}\n', "utf-8"
    )
    (root / "empty.jsonl").write_bytes(b"")  # an empty file is not drift
    out = as_json(cli("index", "--root", f"{root}:kiro", "--json"))
    assert out["stats"]["failed"] == 0
    report = as_json(cli("doctor", "catalogs", "--json"))["catalogs"][0]
    assert report["emptyByFormat"] == {"kiro": 1}
    text = cli("doctor", "catalogs").stdout
    assert "no messages found: 1 kiro source(s)" in text
    assert "kinds to come" not in text  # names and counts only, never content


def _claude(root: Path) -> Path:
    """A Claude Code session with a line type and a content block of the future."""
    base = {"sessionId": "s-drift", "timestamp": "2026-01-01T10:00:00.000Z", "cwd": "/w"}
    return write_jsonl(
        root / "-w" / "s-drift.jsonl",
        [
            {
                **base,
                "type": "user",
                "uuid": "u1",
                "parentUuid": None,
                "message": {"role": "user", "content": "tell me about quokkas"},
            },
            {
                **base,
                "type": "assistant",
                "uuid": "a1",
                "parentUuid": "u1",
                "message": {
                    "id": "m1",
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "They live on Rottnest."},
                        {"type": "citation_card", "text": "wallabyzephyr grazes at dusk"},
                    ],
                },
            },
            {**base, "type": "hologram-state", "note": "privatewords of the future"},
        ],
    )


def _codex(root: Path) -> Path:
    at = "2026-01-01T10:00:00.000Z"
    sid = "0199aaaa-0000-7000-8000-00000000d71f"

    def item(payload: dict[str, Any], kind: str = "response_item") -> dict[str, Any]:
        return {"timestamp": at, "type": kind, "payload": payload}

    return write_jsonl(
        root / "2026" / "01" / "01" / f"rollout-2026-01-01T10-00-00-{sid}.jsonl",
        [
            item({"id": sid, "cwd": "/w", "timestamp": at}, "session_meta"),
            item(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "how do numbats eat"}],
                }
            ),
            item(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [
                        {"type": "output_text", "text": "Termites, mostly."},
                        {"type": "output_transcript", "text": "bilbyquartz burrows deep"},
                    ],
                }
            ),
            item({"note": "privatewords of the future"}, "hologram_event"),
            item({"type": "hologram_call", "note": "privatewords again"}),
        ],
    )


def _pi(root: Path) -> Path:
    at = "2026-01-01T10:00:00.000Z"
    return write_jsonl(
        root / "--w--" / "2026-01-01T10-00-00_p-drift.jsonl",
        [
            {"type": "session", "version": 3, "id": "p-drift", "timestamp": at, "cwd": "/w"},
            {
                "type": "message",
                "id": "e1",
                "parentId": None,
                "timestamp": at,
                "message": {"role": "user", "content": [{"type": "text", "text": "echidnas eat?"}]},
            },
            {
                "type": "message",
                "id": "e2",
                "parentId": "e1",
                "timestamp": at,
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Ants."},
                        {"type": "sticker", "text": "platypusnimbus swims"},
                    ],
                },
            },
            {
                "type": "mood_ring",
                "id": "e3",
                "parentId": "e2",
                "timestamp": at,
                "mood": "privatewords",
            },
        ],
    )


def _gemini(root: Path) -> Path:
    at = "2026-01-01T10:00:00.000Z"
    return write_jsonl(
        root / "tmp" / "0b7d" / "chats" / "session-2026-01-01T10-00-g-drift.jsonl",
        [
            {"sessionId": "g-drift", "projectHash": "0b7d", "startTime": at, "kind": "main"},
            {"id": "g1", "timestamp": at, "type": "user", "content": [{"text": "koalas?"}]},
            {
                "id": "g2",
                "timestamp": at,
                "type": "gemini",
                "content": [{"text": "They sleep."}, {"videoNote": {"text": "dingoprism runs"}}],
            },
            {"id": "g3", "timestamp": at, "type": "hologram", "content": "privatewords"},
        ],
    )


def test_doctor_counts_unknown_record_and_block_types(tmp_path: Path, cli: CliRun) -> None:
    """A type a reader does not know is counted per source and shown by doctor (names,
    counts, one example source), and an unknown block's text is still found."""
    claude, codex, pi, gemini = (tmp_path / name for name in ("claude", "codex", "pi", "gemini"))
    session = _claude(claude)
    _codex(codex)
    _pi(pi)
    _gemini(gemini)
    roots = [f"{claude}:claude-code", f"{codex}:codex", f"{pi}:pi", f"{gemini}:gemini"]
    out = as_json(cli("index", *[a for r in roots for a in ("--root", r)], "--json"))
    assert (out["stats"]["sources"], out["stats"]["failed"]) == (4, 0)
    for word in ("wallabyzephyr", "bilbyquartz", "platypusnimbus", "dingoprism"):
        assert len(hits(cli, word)) == 1, word  # the unknown block's text is indexed
    report = as_json(cli("doctor", "catalogs", "--json"))["catalogs"][0]
    shapes = {(s["format"], s["kind"], s["name"]): s for s in report["unknownShapes"]}
    assert {key: s["count"] for key, s in shapes.items()} == {
        ("claude_code", "record", "hologram-state"): 1,
        ("claude_code", "block", "citation_card"): 1,
        ("codex", "record", "hologram_event"): 1,
        ("codex", "record", "response_item.hologram_call"): 1,
        ("codex", "block", "output_transcript"): 1,
        ("pi", "record", "mood_ring"): 1,
        ("pi", "block", "sticker"): 1,
        ("gemini", "record", "hologram"): 1,
        ("gemini", "block", "videoNote"): 1,
    }
    assert shapes[("claude_code", "record", "hologram-state")]["example"] == str(session)
    text = cli("doctor", "catalogs").stdout
    assert "unknown record type: claude-code 'hologram-state' 1 × in 1 source, e.g." in text
    assert "unknown block type: pi 'sticker' 1 × in 1 source" in text
    assert "privatewords" not in text + json.dumps(report)  # names, never content
    # A changed session is read again: its counts are the new read's, not added on.
    with session.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "hologram-state", "sessionId": "s-drift"}) + "\n")
    cli("index", *[a for r in roots for a in ("--root", r)], "--json")
    report = as_json(cli("doctor", "catalogs", "--json"))["catalogs"][0]
    (shape,) = [s for s in report["unknownShapes"] if s["name"] == "hologram-state"]
    assert (shape["count"], shape["sources"]) == (2, 1)
