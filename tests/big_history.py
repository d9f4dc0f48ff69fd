"""A history big enough for the bulk indexing path (a helper process reads beside the
indexing one past 24 MiB), written fast: plain prose, no reader's corner cases."""

from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = [f"w{n:x}ord" for n in range(4000)]


def big_history(root: Path, sessions: int, megabytes_each: float) -> Path:
    """Claude Code sessions of plain prose; the newest one says ``zebracorn`` once."""
    draw = random.Random(7)
    workspace = "/work/shop"
    folder = root / workspace.strip("/").replace("/", "-")
    folder.mkdir(parents=True)
    newest = folder
    for n in range(sessions):
        session_id = f"b1900000-0000-4000-8000-{n:012d}"
        path = folder / f"{session_id}.jsonl"
        lines, size, parent = [], 0, None
        first = "the nightly zebracorn export" if n == sessions - 1 else "the nightly export"
        k = 0
        while size < megabytes_each * 1024 * 1024:
            role = "user" if k % 2 == 0 else "assistant"
            text = first if k == 0 else " ".join(draw.choices(WORDS, k=400))
            content: object = text if role == "user" else [{"type": "text", "text": text}]
            uuid = f"{session_id}-{k}"
            line = json.dumps(
                {
                    "type": role,
                    "uuid": uuid,
                    "parentUuid": parent,
                    "sessionId": session_id,
                    "cwd": workspace,
                    "timestamp": f"2026-01-{1 + n % 28:02d}T10:{k % 60:02d}:00.000Z",
                    "message": {"role": role, "content": content},
                }
            )
            lines.append(line + "\n")
            size += len(line) + 1
            parent, k = uuid, k + 1
        path.write_text("".join(lines), "utf-8")
        newest = path
    return newest
