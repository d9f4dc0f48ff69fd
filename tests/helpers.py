"""Helpers the local-history tests share: real session files, hashes, CLI output."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from click.testing import Result


def write_session(
    root: Path,
    session_id: str,
    messages: list[dict[str, Any]],
    meta: dict[str, Any] | None = None,
    subdir: str = "",
) -> Path:
    """A native session log with its ``.jsonl.meta`` sidecar."""
    folder = root / subdir if subdir else root
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    path.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages), "utf-8")
    sidecar = {"id": session_id, "revision": len(messages)}
    sidecar.update(meta or {})
    (folder / f"{session_id}.jsonl.meta").write_text(json.dumps(sidecar), "utf-8")
    return path


def append_lines(path: Path, messages: list[dict[str, Any]]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for m in messages:
            handle.write(json.dumps(m, ensure_ascii=False) + "\n")


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def die_at_once(*args: Any) -> None:
    """A helper-process target that dies before sending anything."""
    import os

    os._exit(3)
