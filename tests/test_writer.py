"""The session writer (SPEC L5): locked appends, sidecar revision, hints after unlock."""

from __future__ import annotations

import fcntl
import json
import threading
from pathlib import Path

import pytest

from convodex.catalog.db import Catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.scheduler import Scheduler
from convodex.errors import InvalidInput
from convodex.hints import HintQueue
from convodex.writer import SessionWriter
from helpers import search
from live_server import wait_for


def test_append_writes_lines_and_bumps_revision(root: Path) -> None:
    writer = SessionWriter(root)
    sid = writer.create("s1", title="First", workspace_root="/w")
    assert writer.append(sid, [{"role": "user", "content": "hello"}]) == 1
    assert (
        writer.append(
            sid, [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "bye"}]
        )
        == 2
    )
    lines = [json.loads(line) for line in (root / "s1.jsonl").read_text().splitlines()]
    assert [m["content"] for m in lines] == ["hello", "hi", "bye"]
    assert all(isinstance(m["createdAt"], int) for m in lines)
    meta = json.loads((root / "s1.jsonl.meta").read_text())
    assert meta["revision"] == 2 and meta["name"] == "First" and meta["workspace_root"] == "/w"


def test_invalid_input_is_rejected_before_writing(root: Path) -> None:
    writer = SessionWriter(root)
    with pytest.raises(InvalidInput):
        writer.append("s1", [{"content": "no role"}])
    with pytest.raises(InvalidInput):
        writer.append("../escape", [{"role": "user", "content": "x"}])
    assert not (root / "s1.jsonl").exists()


def test_append_waits_for_the_lock_and_hints_only_after_release(root: Path) -> None:
    hints = HintQueue()
    writer = SessionWriter(root, hints)
    writer.create("s1")
    path = root / "s1.jsonl"
    holder = open(path, "rb")  # another writer holds the advisory lock
    fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
    done = threading.Event()

    def append() -> None:
        writer.append("s1", [{"role": "user", "content": "x"}])
        done.set()

    thread = threading.Thread(target=append)
    thread.start()
    wait_for(lambda: blocked_on_flock(path), timeout=5)
    assert not done.is_set() and len(hints) == 0  # blocked on the lock, no hint yet
    fcntl.flock(holder.fileno(), fcntl.LOCK_UN)
    holder.close()
    thread.join(5)
    assert done.is_set() and hints.drain() == [path]


def blocked_on_flock(path: Path) -> bool:
    """Whether some process waits for an flock on ``path`` (Linux ``/proc/locks``)."""
    inode = path.stat().st_ino
    lines = Path("/proc/locks").read_text().splitlines()
    return any("-> FLOCK" in line and f":{inode} " in line for line in lines)


def test_hints_coalesce_by_path(root: Path) -> None:
    hints = HintQueue()
    writer = SessionWriter(root, hints)
    for i in range(5):
        writer.append("s1", [{"role": "user", "content": f"m{i}"}])
    writer.append("s2", [{"role": "user", "content": "other"}])
    assert hints.sent == 6
    assert hints.drain() == [root / "s1.jsonl", root / "s2.jsonl"]
    assert hints.drain() == []


def test_hinted_appends_are_indexed_incrementally(root: Path, catalog: Catalog) -> None:
    hints = HintQueue()
    writer = SessionWriter(root, hints)
    writer.append("s1", [{"role": "user", "content": f"old message {i}"} for i in range(200)])
    Indexer(catalog).run([root])
    hints.drain()
    size = (root / "s1.jsonl").stat().st_size
    writer.append("s1", [{"role": "user", "content": "fresh hinted words"}])
    writer.append("s2", [{"role": "user", "content": "fresh new session"}])
    scheduler = Scheduler(catalog, [root], hints=hints)  # not started: drained here
    scheduler.drain_hints()
    fresh = scheduler.indexer
    assert fresh.stats.indexed == 2
    assert fresh.stats.appended == 1 and fresh.stats.rebuilt == 1  # s2 is new
    appended = (root / "s1.jsonl").stat().st_size - size
    new_file = (root / "s2.jsonl").stat().st_size
    assert fresh.stats.bytes_read == appended + new_file  # only the new range of s1
    hits = search(catalog, "fresh")["hits"]
    assert sorted((h["sessionId"], h["messageIndex"]) for h in hits) == [("s1", 200), ("s2", 0)]


def test_a_torn_last_line_is_finished_before_appending(root: Path) -> None:
    path = root / "s1.jsonl"
    path.write_text('{"role":"user","content":"ok"}\n{"role":"user","con')
    SessionWriter(root).append("s1", [{"role": "user", "content": "next"}])
    lines = path.read_text().splitlines()
    assert json.loads(lines[-1])["content"] == "next"
