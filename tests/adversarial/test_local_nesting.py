"""Issue 12, item 1: a deeply nested first record fails its source, never the run.

The nesting used to raise ``RecursionError`` out of format detection (a ``.jsonl``
sniffed by its first record) and out of session info (a Gemini ``.json``): ``convodex
index`` printed a traceback and exited 1, and the background indexer of ``serve``
died, leaving progress at ``empty 0/0`` for good.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import service, write_session
from live_server import serving, wait_for
from local_faults import convodex, hit_paths, ok_json, source_states

DEPTH = 1000


def nested(depth: int = DEPTH) -> str:
    return "[" * depth + "]" * depth


def deep_roots(tmp_path: Path) -> tuple[Path, Path]:
    """A root of native logs with one deep first record, and a Gemini root with one."""
    logs = tmp_path / "logs"
    write_session(logs, "healthy", [{"role": "user", "content": "walrus on the ice"}])
    (logs / "deep.jsonl").write_text(
        '{"role":"user","content":"x","message":'
        + nested()
        + "}\n"
        + json.dumps({"role": "user", "content": "walrus again"})
        + "\n",
        "utf-8",
    )
    chats = tmp_path / "gemini" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-deep.json").write_text(
        '{"sessionId":"deep","projectHash":"p","messages":' + nested() + "}", "utf-8"
    )
    (chats / "session-fine.json").write_text(
        json.dumps(
            {
                "sessionId": "fine",
                "projectHash": "p",
                "messages": [{"id": "m1", "type": "user", "content": "walrus in gemini"}],
            }
        ),
        "utf-8",
    )
    return logs, tmp_path / "gemini"


def test_index_marks_deep_sources_failed_and_goes_on(tmp_path: Path, cache_dir: Path) -> None:
    logs, gemini = deep_roots(tmp_path)
    roots = ["--root", str(logs), "--root", f"{gemini}:gemini", "--cache-dir", str(cache_dir)]
    report = ok_json(convodex("index", "--json", *roots))
    assert report["stats"]["errors"] == {"RecursionError": 2}
    assert report["progress"]["state"] == "complete"
    states = source_states(cache_dir)
    assert states["deep.jsonl"] == ("failed", "RecursionError")
    assert states["session-deep.json"] == ("failed", "RecursionError")
    found = ok_json(convodex("search", "walrus", "--json", *roots))
    assert hit_paths(found) == {"healthy.jsonl", "session-fine.json"}
    # A second run has nothing new to say about them: they stay failed, nothing crashes.
    again = ok_json(convodex("index", "--json", *roots))
    assert again["progress"]["failed"] == 2 and again["progress"]["state"] == "complete"


def test_serve_keeps_indexing_past_a_deep_source(tmp_path: Path, cache_dir: Path) -> None:
    logs, _ = deep_roots(tmp_path)
    history = service(cache_dir, [logs.resolve()])
    with serving(history) as client:
        wait_for(lambda: client.get("/status").json()["state"] == "complete", timeout=30)
        status = client.get("/status").json()
        assert (status["indexed"], status["failed"], status["total"]) == (1, 1, 2)
        found = client.get("/search", params={"q": "walrus"}).json()
        assert hit_paths(found) == {"healthy.jsonl"}
        # The scheduler is alive: a new session is picked up by the next scan.
        write_session(logs, "later", [{"role": "user", "content": "walrus later"}])
        assert history.scheduler is not None
        history.scheduler.request_scan()

        def found_later() -> bool:
            return "later.jsonl" in hit_paths(client.get("/search", params={"q": "walrus"}).json())

        wait_for(found_later, timeout=30)
