"""Change detection that cannot be fooled (issue 24 item 10), through the real CLI.

A transcript edited in place to the same size whose modification time is put back
(``touch -r``, ``cp -p``, some editors and sync tools) is found by ``index`` when the
edit is in the indexed head or tail (their signatures are checked for every source
whose stat did not change, at a bounded cost per run); a transcript replaced by a
directory of the same name, or by a FIFO, is marked failed by the next ``index``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from helpers import write_session
from local_faults import convodex, hit_paths, ok_json, released_fifo, source_states


def test_a_same_size_edit_with_its_mtime_put_back_is_found(tmp_path: Path, root: Path) -> None:
    cache = tmp_path / "cache"
    path = write_session(root, "edited", [{"role": "user", "content": "the walrus sleeps"}])
    args = ("--root", str(root), "--cache-dir", str(cache))
    ok_json(convodex("index", "--json", *args))
    before = path.stat()
    data = path.read_bytes()
    path.write_bytes(data.replace(b"walrus", b"narwhl"))  # same size, same inode
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # touch -r: mtime put back
    after = path.stat()
    assert (after.st_size, after.st_ino, after.st_mtime_ns) == (
        before.st_size,
        before.st_ino,
        before.st_mtime_ns,
    )
    report = ok_json(convodex("index", "--json", *args))
    assert report["stats"]["rebuilt"] == 1
    found = ok_json(convodex("search", "narwhl", "--json", "--no-refresh", *args))
    assert hit_paths(found) == {"edited.jsonl"}
    gone = ok_json(convodex("search", "walrus", "--json", "--no-refresh", *args))
    assert gone["hits"] == []


def test_a_transcript_replaced_by_a_directory_or_a_fifo_is_failed(
    tmp_path: Path, root: Path
) -> None:
    cache = tmp_path / "cache"
    folder = write_session(root, "folder", [{"role": "user", "content": "walrus one"}])
    piped = write_session(root, "piped", [{"role": "user", "content": "walrus two"}])
    write_session(root, "kept", [{"role": "user", "content": "walrus three"}])
    args = ("--root", str(root), "--cache-dir", str(cache))
    ok_json(convodex("index", "--json", *args))
    folder.unlink()
    folder.mkdir()  # a directory of the same name
    piped.unlink()
    with released_fifo(piped):
        ok_json(convodex("index", "--json", *args))
        states = source_states(cache)
        assert states["folder.jsonl"] == ("failed", "NotARegularFile")
        assert states["piped.jsonl"] == ("failed", "NotARegularFile")
        assert states["kept.jsonl"] == ("ok", None)
    shutil.rmtree(folder)
