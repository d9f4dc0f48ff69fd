"""Real-world shapes the readers once missed, each behind a general rule: detection by
content wherever a file sits, and a root's declared format winning over a guess."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from convodex.sources.discover import detect
from helpers import CliRun, as_json, hits, write_jsonl


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
