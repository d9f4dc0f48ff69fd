"""Issue 12, item 13 (SPEC L5): an in-place edit of the same size is a rewrite.

Replacing a word in the middle of a transcript keeps its size and inode, and the log
signature covers only the first and last 4 KiB before the checkpoint, so ``index``
took it for an append of 0 bytes, forever: the new word was never found and the old
one kept matching. A changed mtime with an unchanged size now rebuilds the source.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers import write_session
from local_faults import convodex, hit_paths, ok_json


def test_same_size_edit_in_the_middle_is_reindexed(tmp_path: Path, root: Path) -> None:
    cache = tmp_path / "cache"
    filler = [{"role": "assistant", "content": "filler " * 200} for _ in range(8)]
    middle = [{"role": "user", "content": "the walrus sleeps"}]
    path = write_session(root, "edited", [*filler, *middle, *filler])
    args = ("--root", str(root), "--cache-dir", str(cache))
    ok_json(convodex("index", "--json", *args))
    assert hit_paths(ok_json(convodex("search", "walrus", "--json", *args))) == {"edited.jsonl"}

    before = path.stat()
    data = path.read_bytes()
    at = data.index(b"walrus")
    assert 4096 < at < len(data) - 4096  # outside both signature windows
    with open(path, "r+b") as handle:  # an editor saving in place: same inode, same size
        handle.seek(at)
        handle.write(b"narwhl")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    after = path.stat()
    assert (after.st_size, after.st_ino) == (before.st_size, before.st_ino)

    report = ok_json(convodex("index", "--json", *args))
    assert report["stats"]["rebuilt"] == 1 and report["stats"]["appended"] == 0
    assert hit_paths(ok_json(convodex("search", "narwhl", "--json", *args))) == {"edited.jsonl"}
    assert ok_json(convodex("search", "walrus", "--json", *args))["hits"] == []
