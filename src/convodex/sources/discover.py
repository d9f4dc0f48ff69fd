"""Roots and the transcripts inside them.

A root is scanned recursively; every file a known format claims becomes a source.
The format comes from ``--root PATH:format`` when given, else from where the root
is (``~/.claude/projects`` holds Claude Code, ``~/.codex`` Codex rollouts,
``~/.gemini`` Gemini chats), else per file: by name (``rollout-*.jsonl``,
``conversations.json``), then by sniffing the first record of ``.jsonl`` and the
first 64 KiB of ``.json`` files (cached per path and inode, so a rescan of
unchanged files opens nothing).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from convodex import config
from convodex.errors import SourceError
from convodex.sources import chat_export, claude_code, codex, dag, gemini, session_log
from convodex.sources.base import SourceFormat

FORMATS: dict[str, SourceFormat] = {
    session_log.NAME: session_log.FORMAT,
    dag.NAME: dag.FORMAT,
    claude_code.NAME: claude_code.FORMAT,
    codex.NAME: codex.FORMAT,
    gemini.NAME: gemini.FORMAT,
    chat_export.NAME: chat_export.FORMAT,
}
# ``--root PATH:format`` overrides, by resolved root path (process-local, set by
# ``resolve_root``; the indexer scans roots by path only).
_ROOT_FORMATS: dict[str, str] = {}
_SNIFFED: dict[tuple[str, int], str | None] = {}
SNIFF_BYTES = 64 * 1024
SIDECAR_SUFFIXES = (".meta.json", ".jsonl.meta")
CLAUDE_LINE_TYPES = frozenset(
    {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}
)
CODEX_LINE_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_JSON_HINTS = (
    (re.compile(rb'"(?:mapping|chat_messages)"\s*:'), chat_export.NAME),
    (re.compile(rb'"(?:projectHash|history)"\s*:'), gemini.NAME),
)


class _Sniff(msgspec.Struct):
    type: str | None = None
    role: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    sessionId: str | None = None
    projectHash: str | None = None
    msgs: Any = None
    head: str | None = None
    record_type: str | None = None
    instructions: Any = None
    created_at: Any = None
    message: Any = None


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


def agent_roots() -> list[tuple[Path, str]]:
    """Where other agents keep history on Linux and macOS (same home-relative paths)."""
    home = Path.home()
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    return [
        (claude / "projects", claude_code.NAME),
        (codex_home / "sessions", codex.NAME),
        (codex_home / "archived_sessions", codex.NAME),
        (home / ".gemini" / "tmp", gemini.NAME),
    ]


def default_roots() -> list[Path]:
    """convodex's own sessions and chat exports, then every supported agent's root."""
    roots = [config.sessions_dir(), config.data_home() / "exports"]
    return roots + [path for path, _ in agent_roots()]


def split_root(spec: str | os.PathLike[str]) -> tuple[str, str | None]:
    """``PATH[:format]``: the format suffix only when it names a known format.

    Hyphens and underscores are interchangeable in format names.
    """
    text = os.fspath(spec)
    head, sep, tail = text.rpartition(":")
    name = tail.replace("-", "_")  # `claude-code` as people write it, `claude_code` too
    if sep and head and name in FORMATS:
        return head, name
    return text, None


def resolve_root(path: str | os.PathLike[str], *, must_exist: bool = True) -> Path:
    """A root path; ``PATH:format`` also records that format for every file under it."""
    spec, fmt = split_root(path)
    root = Path(spec).expanduser()
    root = root.resolve() if root.exists() else Path(os.path.abspath(root))
    if must_exist and not root.is_dir():
        raise SourceError(str(root), "root is not a directory")
    if fmt is not None:
        _ROOT_FORMATS[str(root)] = fmt
    return root


def root_format(root: Path) -> str | None:
    """The format every file under ``root`` has: an override, or a known agent root."""
    if str(root) in _ROOT_FORMATS:
        return _ROOT_FORMATS[str(root)]
    for path, fmt in agent_roots():
        if root == path or root.is_relative_to(path):
            return fmt
    return None


def format_of(name: str) -> str | None:
    """Which format claims a file, by its name alone."""
    if name.startswith("rollout-") and name.endswith(".jsonl"):
        return codex.NAME
    if name == "conversations.json":
        return chat_export.NAME
    if session_log.is_transcript_name(name):
        return session_log.NAME
    return None


def claims(fmt: str, name: str) -> bool:
    """Whether a file under a root of format ``fmt`` is a transcript of it."""
    if name.endswith(SIDECAR_SUFFIXES) or name.endswith(session_log.EXCLUDED_SUFFIXES):
        return False
    if fmt in (gemini.NAME, chat_export.NAME):
        return name.endswith((".json", ".jsonl"))
    return name.endswith(".jsonl")


def sniff(path: Path, inode: int) -> str | None:
    """The format of a file by its first record (cached per path and inode)."""
    key = (str(path), inode)
    if key not in _SNIFFED:
        _SNIFFED[key] = _sniff(path)
    return _SNIFFED[key]


def _sniff(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            if path.name.endswith(".json"):
                head = handle.read(SNIFF_BYTES)
                return next((fmt for rx, fmt in _JSON_HINTS if rx.search(head)), None)
            first = b""
            while not first.strip():
                first = handle.readline(SNIFF_BYTES)
                if not first:
                    return None
    except OSError:
        return None
    try:
        rec = msgspec.json.decode(first, type=_Sniff)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if rec.type in dag.KNOWN_TYPES and (rec.msgs is not None or rec.head is not None):
        return dag.NAME
    if rec.type in CODEX_LINE_TYPES or rec.record_type is not None or rec.instructions:
        return codex.NAME
    if rec.projectHash is not None:
        return gemini.NAME
    if rec.uuid or rec.parentUuid or rec.sessionId or rec.type in CLAUDE_LINE_TYPES:
        return claude_code.NAME
    if isinstance(rec.created_at, str) and rec.role and rec.message is not None:
        return codex.NAME
    if rec.role:
        return session_log.NAME
    return None


def detect(path: Path, inode: int, fixed: str | None) -> str | None:
    """The format of one file found under a root (``fixed``: the root's format)."""
    name = path.name
    if fixed is not None:
        return fixed if claims(fixed, name) else None
    if name.endswith(SIDECAR_SUFFIXES) or name.endswith(session_log.EXCLUDED_SUFFIXES):
        return None
    by_name = format_of(name)
    if by_name is not None and by_name != session_log.NAME:
        return by_name
    if name.endswith((".jsonl", ".json")):
        # Unrecognised .jsonl stays a native log: its malformed lines are then counted.
        return sniff(path, inode) or by_name
    return None


def scan(root: Path) -> Iterator[Discovered]:
    """Every transcript under ``root``, depth first; unreadable dirs are skipped."""
    fixed = root_format(root)
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
                if not entry.name.endswith((".jsonl", ".json")):
                    continue
                st = entry.stat()
                fmt = detect(Path(entry.path), st.st_ino, fixed)
                if fmt is None:
                    continue
            except OSError:
                continue
            yield Discovered(Path(entry.path), fmt, FileStat(st.st_size, st.st_mtime_ns, st.st_ino))
        stack.extend(reversed(subdirs))
