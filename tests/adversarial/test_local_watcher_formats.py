"""A new file the watcher reports gets the format a scan would give it.

The hint path (the file watcher, then the indexer's registration of a file no scan
has seen) picked a format from the file's name alone: a Claude Code ``.jsonl`` was
registered as a native log (and found nothing) and a VS Code ``.json`` chat session
was not looked at until the next full rescan, up to an hour later here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from convodex.sources.roots import resolve_root
from helpers import FIXTURES, service, write_claude_session
from live_server import serving, wait_for

VSCODE_SESSION = (
    FIXTURES
    / "handwritten"
    / "copilot-vscode"
    / "User"
    / "workspaceStorage"
    / "5f2c0a9e1b7d"
    / "chatSessions"
    / "aa11bb22-0000-4000-8000-0000000000aa.json"
)


def test_watched_files_get_their_roots_format(tmp_path: Path, cache_dir: Path) -> None:
    claude = tmp_path / "claude"
    vscode = tmp_path / "vscode" / "workspaceStorage" / "abc" / "chatSessions"
    (claude / "w").mkdir(parents=True)  # the project folder of the session written below
    vscode.mkdir(parents=True)
    roots: list[Path] = [
        resolve_root(f"{claude}:claude-code"),
        resolve_root(f"{vscode.parent}:copilot-vscode"),
    ]
    history = service(cache_dir, roots, rescan_seconds=3600)
    with serving(history, watch=True) as client:
        wait_for(lambda: client.get("/status").json()["state"] == "complete", timeout=30)
        wait_for(history.watching.is_set)

        def agents(query: str) -> set[str]:
            page = client.get("/search", params={"q": query}).json()
            return {h["agent"] for h in page["hits"]}

        write_claude_session(claude, "c1", "/w", [("user", "walrus from claude", 1)])
        wait_for(lambda: agents("walrus") == {"claude-code"}, timeout=30)
        shutil.copy(VSCODE_SESSION, vscode / VSCODE_SESSION.name)
        wait_for(lambda: agents("medlar") == {"copilot-vscode"}, timeout=30)
