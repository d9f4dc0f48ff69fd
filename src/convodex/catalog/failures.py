"""Failed sources by name (SPEC L17): which transcripts could not be indexed, and why.

``index`` and ``doctor`` print these, one line each, and ``doctor catalogs --json``
lists them. The catalog keeps a failed source's error class (never its content); the
reason people read is said here once, per class. A source that indexed with some
unreadable lines is not failed: its lines count as line errors.
"""

from __future__ import annotations

from collections.abc import Sequence

from convodex.models import FailedSource
from convodex.sqlite import marks, sqlite3
from convodex.text.agents import agent_label

# What each error class means to the person reading the list.
REASONS = {
    "NotARegularFile": "not a regular file (a FIFO, a device or a directory)",
    "SymlinkOutsideRoot": "a link out of its root (--follow-symlinks reads it)",
    "IsADirectoryError": "not a regular file (a FIFO, a device or a directory)",
    "PermissionError": "cannot be read: permission denied",
    "SessionReplayLimitError": "over a size budget (see docs/operations.md, budgets)",
    "UnicodeDecodeError": "not UTF-8 text",
    "JSONDecodeError": "not valid JSON",
    "DecodeError": "not valid JSON",
    "ValidationError": "not in the format its agent writes",
    "MalformedJSON": "not valid JSON",
    "RecursionError": "nested too deeply to read",
    "MemoryError": "too large to read",
}


def reason(error_class: str | None) -> str:
    """The reason a source with this error class failed, in words."""
    if error_class is None:
        return "cannot be read"
    return REASONS.get(error_class, f"cannot be read ({error_class})")


def failed_sources(
    db: sqlite3.Connection, root_ids: Sequence[int] | None = None
) -> list[FailedSource]:
    """Every failed source (of these roots), by path."""
    sql = "SELECT path, format, error_class FROM sources WHERE health = 'failed'"
    params: list[int] = []
    if root_ids is not None:
        sql += f" AND root_id IN ({marks(root_ids)})"
        params = list(root_ids)
    return [
        FailedSource(
            path=str(path),
            agent=agent_label(str(fmt)),
            error_class=error_class,
            reason=reason(error_class),
        )
        for path, fmt, error_class in db.execute(sql + " ORDER BY path", params)
    ]
