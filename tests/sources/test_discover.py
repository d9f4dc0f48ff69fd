"""Discovery keeps no process-wide state: what a scan sniffed is a value its scanner
holds (``Sniffed``), remembered by path and inode and bounded."""

from __future__ import annotations

import os
from pathlib import Path

from convodex.sources.discover import Sniffed, scan
from convodex.sources.roots import resolve_root

GEMINI = b'{"sessionId": "s1", "projectHash": "abc", "messages": []}'
CHAT_EXPORT = b'[{"title": "t", "mapping": {}}]'


def formats(root: Path, sniffed: Sniffed | None = None) -> dict[str, str]:
    return {item.path.name: item.format for item in scan(resolve_root(root), sniffed=sniffed)}


def test_a_rescan_with_the_same_sniffed_opens_no_unchanged_file(tmp_path: Path) -> None:
    root = tmp_path / "exports"
    root.mkdir()
    path = root / "chat.json"
    path.write_bytes(GEMINI)
    sniffed = Sniffed()
    assert formats(root, sniffed) == {"chat.json": "gemini"}

    # The same file (path and inode) with other bytes: the remembered format answers,
    # the file is not read again; a scan without the memory reads it.
    with open(path, "r+b") as handle:
        handle.truncate(0)
        handle.write(CHAT_EXPORT)
    assert formats(root, sniffed) == {"chat.json": "gemini"}
    assert formats(root) == {"chat.json": "chat_export"}
    assert formats(root, Sniffed()) == {"chat.json": "chat_export"}

    # A file replaced (a new inode) is sniffed again.
    fresh = root / "fresh.tmp"
    fresh.write_bytes(CHAT_EXPORT)
    os.replace(fresh, path)
    assert formats(root, sniffed) == {"chat.json": "chat_export"}


def test_sniffed_forgets_the_oldest_beyond_its_bound(tmp_path: Path) -> None:
    root = tmp_path / "exports"
    root.mkdir()
    for n in range(3):
        (root / f"chat{n}.json").write_bytes(GEMINI)
    sniffed = Sniffed(keep=2)
    assert set(formats(root, sniffed).values()) == {"gemini"}
    assert len(sniffed) == 2
    # chat0 was forgotten: it is read again and tells its new format.
    with open(root / "chat0.json", "r+b") as handle:
        handle.truncate(0)
        handle.write(CHAT_EXPORT)
    assert formats(root, sniffed)["chat0.json"] == "chat_export"
    assert len(sniffed) == 2
