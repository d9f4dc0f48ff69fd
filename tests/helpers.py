"""Helpers the local-history tests share: real session files, hashes, CLI output."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from convodex.catalog.db import Catalog
from convodex.catalog.plan import SearchRequest
from convodex.catalog.search import Searcher
from convodex.catalog.service import Background, HistoryService
from convodex.models import to_builtins

CliRun = Callable[..., Result]
"""The ``cli`` fixture: runs the real CLI with the test's cache dir."""


def write_session(
    root: Path,
    session_id: str,
    messages: list[Any],
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


def search(catalog: Catalog, query: str, **options: Any) -> dict[str, Any]:
    """One search page as its JSON shape (what ``--json`` and HTTP print)."""
    page = Searcher(catalog).search(SearchRequest(query=query, **options))
    result: dict[str, Any] = to_builtins(page)
    return result


def service(cache_dir: Path, roots: list[Path], **background: Any) -> HistoryService:
    """A history service whose background work (once started) uses these settings."""
    return HistoryService.open(cache_dir, roots, background=Background(**background))
