"""Records written without a newline between them (``{…}{…}`` on one line), a writer
fault several agents have: every JSONL reader splits them back into their records
(``jsonl.glued``), so gluing a file's lines changes none of its messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convodex.sources.base import Budget, ReadResult
from convodex.sources.registry import FORMATS
from helpers import FIXTURES, read_all

# One real sample per JSONL format.
SAMPLES = {
    "claude_code": "claude-code/agent-sessions-large.jsonl",
    "codex": "codex/agent-sessions-large.jsonl",
    "gemini": "gemini/agent-sessions-jsonl_v040.jsonl",
    "copilot_cli": "copilot-cli/agent-sessions-large.jsonl",
    "droid": "droid/agent-sessions-session_store_large.jsonl",
    "pi": "pi/agent-sessions-small.jsonl",
    "cursor": "cursor/agent-sessions-large.jsonl",
    "qwen": "qwen/agent-sessions/019f0000-0000-7000-8000-000000000001.jsonl",
}


def native_log(tmp_path: Path) -> str:
    """convodex's own session log: a few records of every role."""
    lines = [
        {"role": "user", "content": "Which port does the server use?", "createdAt": 1},
        {"role": "assistant", "content": "It listens on 8080.", "createdAt": 2},
        {"role": "user", "content": "Move it to 9090.", "createdAt": 3},
        {"role": "assistant", "content": "Done: 9090 now.", "createdAt": 4},
    ]
    path = tmp_path / "native" / "log.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    return str(path.relative_to(FIXTURES)) if path.is_relative_to(FIXTURES) else str(path)


def glue(text: str) -> str:
    """Every second line break removed: records pairwise on one line."""
    lines = text.splitlines(keepends=True)
    return "".join(line.rstrip("\n") if n % 2 == 0 else line for n, line in enumerate(lines))


@pytest.mark.parametrize("fmt", [*sorted(SAMPLES), "session_log"])
def test_glued_records_are_split_in_every_jsonl_reader(fmt: str, tmp_path: Path) -> None:
    sample = FIXTURES / SAMPLES[fmt] if fmt in SAMPLES else Path(native_log(tmp_path))
    path = tmp_path / sample.name
    path.write_text(glue(sample.read_text("utf-8")), "utf-8")
    assert path.read_text("utf-8").count("\n") < sample.read_text("utf-8").count("\n")

    def seen(p: Path) -> list[tuple[str, str]]:
        return [(m.role, m.text()) for m in read_all(FORMATS[fmt], p) if m.documents]

    expected = seen(sample)
    assert expected
    assert seen(path) == expected
    result = ReadResult(0, 0)
    list(FORMATS[fmt].read(path, result, Budget.from_env()))
    assert result.errors == [] or fmt == "codex"  # its sample has a bad line of its own
