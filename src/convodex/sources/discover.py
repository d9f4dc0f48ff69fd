"""Roots and the transcripts inside them.

A root is scanned recursively; every file a known format claims becomes a source.
Scanning only lists and stats files: it never opens a transcript.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from convodex import config
from convodex.errors import SourceError
from convodex.sources import session_log
from convodex.sources.base import SourceFormat

FORMATS: dict[str, SourceFormat] = {session_log.NAME: session_log.FORMAT}


@dataclass(frozen=True, slots=True)
class FileStat:
    """The identity of a file's bytes as far as a stat can tell."""

    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> FileStat:
        st = os.stat(path)
        return cls(st.st_size, st.st_mtime_ns, st.st_ino)


@dataclass(frozen=True, slots=True)
class Discovered:
    path: Path
    format: str
    stat: FileStat


def default_roots() -> list[Path]:
    """convodex's own session directory; other agents' roots come with their formats."""
    return [config.sessions_dir()]


def resolve_root(path: str | os.PathLike[str], *, must_exist: bool = True) -> Path:
    root = Path(path).expanduser()
    root = root.resolve() if root.exists() else Path(os.path.abspath(root))
    if must_exist and not root.is_dir():
        raise SourceError(str(root), "root is not a directory")
    return root


def format_of(name: str) -> str | None:
    """Which format claims a file, by its name."""
    if session_log.is_transcript_name(name):
        return session_log.NAME
    return None


def scan(root: Path) -> Iterator[Discovered]:
    """Every transcript under ``root``, depth first; unreadable dirs are skipped."""
    stack = [root]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        entries.sort(key=lambda e: e.name)
        subdirs = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(Path(entry.path))
                    continue
                if not entry.is_file():
                    continue
                fmt = format_of(entry.name)
                if fmt is None:
                    continue
                st = entry.stat()
            except OSError:
                continue
            yield Discovered(Path(entry.path), fmt, FileStat(st.st_size, st.st_mtime_ns, st.st_ino))
        stack.extend(reversed(subdirs))
