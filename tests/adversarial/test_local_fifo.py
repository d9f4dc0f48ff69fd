"""Issue 12, item 2: a FIFO (or a device) where a session was never blocks anything.

A known session replaced by a FIFO used to block ``open()`` forever: the file
watcher's hint stopped the background indexer for good, and the session view and the
complete session tree hung their request. Sources are opened without blocking and
read only when they are regular files; anything else fails that source, by name.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers import service, write_session
from live_server import serving, wait_for
from local_faults import convodex, hit_paths, ok_json, released_fifo, source_states

REQUEST_TIMEOUT = 15.0


def test_serve_survives_a_session_replaced_by_a_fifo(root: Path, cache_dir: Path) -> None:
    replaced = write_session(root, "alpha", [{"role": "user", "content": "walrus alpha"}])
    write_session(root, "bravo", [{"role": "user", "content": "walrus bravo"}])
    history = service(cache_dir, [root.resolve()])
    with serving(history, watch=True) as client:
        wait_for(lambda: client.get("/status").json()["state"] == "complete", timeout=30)
        wait_for(history.watching.is_set)
        replaced.unlink()
        with released_fifo(replaced):
            # The watcher hints the new FIFO; the indexer fails it and goes on.
            wait_for(lambda: client.get("/status").json()["failed"] == 1, timeout=30)
            view = client.get("/sessions/alpha", timeout=REQUEST_TIMEOUT)
            assert view.status_code == 422
            assert "not a regular file" in view.json()["error"]
            tree = client.get("/tree", timeout=REQUEST_TIMEOUT).json()
            assert {r["sessionId"]: r["health"] for r in tree["rows"]}["alpha"] == "failed"
            found = client.get("/search", params={"q": "walrus"}, timeout=REQUEST_TIMEOUT)
            assert hit_paths(found.json()) == {"bravo.jsonl"}
            # The background indexer is still alive for everything else.
            write_session(root, "charlie", [{"role": "user", "content": "walrus charlie"}])
            wait_for(
                lambda: (
                    "charlie.jsonl"
                    in hit_paths(client.get("/search", params={"q": "walrus"}).json())
                ),
                timeout=30,
            )


def test_index_fails_fifos_and_devices_by_name(tmp_path: Path, root: Path) -> None:
    cache = tmp_path / "cache"
    replaced = write_session(root, "alpha", [{"role": "user", "content": "walrus alpha"}])
    write_session(root, "bravo", [{"role": "user", "content": "walrus bravo"}])
    args = ("--root", str(root), "--cache-dir", str(cache))
    ok_json(convodex("index", "--json", *args))
    replaced.unlink()
    with released_fifo(replaced), released_fifo(root / "new-pipe.jsonl"):
        # A device reached through a link the user asked to follow: not a regular file.
        os.symlink("/dev/zero", root / "zeros.jsonl")
        report = ok_json(convodex("index", "--json", "--follow-symlinks", *args, timeout=60))
        assert report["stats"]["errors"] == {"NotARegularFile": 3}
        states = source_states(cache)
        for name in ("alpha.jsonl", "new-pipe.jsonl", "zeros.jsonl"):
            assert states[name] == ("failed", "NotARegularFile"), name
        assert states["bravo.jsonl"] == ("ok", None)
        found = ok_json(convodex("search", "walrus", "--json", *args, timeout=60))
        assert hit_paths(found) == {"bravo.jsonl"}
