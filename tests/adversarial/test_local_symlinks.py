"""Issue 12, item 11: links that leave the root are not followed without
``--follow-symlinks``.

``outside.jsonl -> /etc/passwd`` used to be read (and anything JSON-shaped behind
such a link indexed and searchable). A link out of the root now fails its source by
name, rows and all, unless the user asked to follow links.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers import service, write_session
from live_server import serving, wait_for
from local_faults import convodex, hit_paths, ok_json, source_states


def outside_session(tmp_path: Path) -> Path:
    elsewhere = tmp_path / "elsewhere"
    return write_session(elsewhere, "private", [{"role": "user", "content": "walrus private"}])


def test_links_out_of_the_root_are_not_followed(tmp_path: Path, root: Path) -> None:
    cache = tmp_path / "cache"
    target = outside_session(tmp_path)
    write_session(root, "inside", [{"role": "user", "content": "walrus inside"}])
    os.symlink(target, root / "outside.jsonl")
    os.symlink("/etc/passwd", root / "passwd.jsonl")
    os.symlink(root / "inside.jsonl", root / "alias.jsonl")  # stays in the root: followed
    args = ("--root", str(root), "--cache-dir", str(cache))

    report = ok_json(convodex("index", "--json", *args))
    assert report["stats"]["errors"] == {"SymlinkOutsideRoot": 2}
    states = source_states(cache)
    assert states["outside.jsonl"] == ("failed", "SymlinkOutsideRoot")
    assert states["passwd.jsonl"] == ("failed", "SymlinkOutsideRoot")
    found = ok_json(convodex("search", "walrus", "--json", *args))
    assert hit_paths(found) == {"inside.jsonl", "alias.jsonl"}

    # A known session replaced by a link out of the root loses its rows too.
    (root / "inside.jsonl").unlink()
    os.symlink(target, root / "inside.jsonl")
    ok_json(convodex("index", "--json", *args))
    assert source_states(cache)["inside.jsonl"] == ("failed", "SymlinkOutsideRoot")
    assert ok_json(convodex("search", "walrus", "--json", *args))["hits"] == []

    # Asked for, links are followed (search --wait indexes with the same option).
    followed = ok_json(convodex("search", "walrus", "--json", "--wait", "--follow-symlinks", *args))
    assert hit_paths(followed) == {"outside.jsonl", "inside.jsonl", "alias.jsonl"}


def test_serve_does_not_follow_a_hinted_link_out_of_the_root(tmp_path: Path, root: Path) -> None:
    target = outside_session(tmp_path)
    write_session(root, "inside", [{"role": "user", "content": "walrus inside"}])
    history = service(tmp_path / "cache", [root.resolve()])
    with serving(history, watch=True) as client:
        wait_for(lambda: client.get("/status").json()["state"] == "complete", timeout=30)
        wait_for(history.watching.is_set)
        os.symlink(target, root / "outside.jsonl")  # the watcher hints it at once
        wait_for(lambda: client.get("/status").json()["failed"] == 1, timeout=30)
        assert hit_paths(client.get("/search", params={"q": "walrus"}).json()) == {"inside.jsonl"}
