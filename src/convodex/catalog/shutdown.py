"""When a catalog needs an integrity check (SPEC L8, L20): after an unclean shutdown,
for a file never checked (or replaced since), and on a bounded schedule, never on
every open or every no-op ``index``. ``doctor`` checks in full whenever asked.

Two small files in ``history-search.state/`` (beside the catalog's directory) say it:
- ``<catalog>.open/<pid>-<start>``: one per process that has the file open for
  writing, removed when it closes it; one whose process is gone means that process
  died with the file open (killed, crashed, powered off).
- ``<catalog>.checked``: holds the inode of the file last found sound; its mtime is
  when. No stamp, another inode or a stamp older than ``CHECK_EVERY_SECONDS``: due.
(``stamps`` keeps its signature cursor there too.)
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

# The bounded schedule: a file is checked again at least this often.
CHECK_EVERY_SECONDS = 7 * 24 * 3600


def state_dir(path: Path) -> Path:
    """``history-search.state/`` beside the catalog's own directory, which holds the
    catalog and its side files only."""
    folder = path.parent.with_name(f"{path.parent.name}.state")
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def _marks(path: Path) -> Path:
    return state_dir(path) / f"{path.name}.open"


def _stamp(path: Path) -> Path:
    return state_dir(path) / f"{path.name}.checked"


def _start_time(pid: int) -> str:
    """A process's start time (clock ticks since boot), so a reused pid is not taken
    for the process that died; empty where /proc does not say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return ""
    # The command name (field 2) is parenthesised and may hold spaces.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else ""


def _alive(name: str) -> bool:
    pid_text, _, start = name.partition("-")
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        pass  # another user's process: alive
    return not start or _start_time(pid) in ("", start)


class OpenMark:
    """This process has the catalog open for writing (removed by ``close``)."""

    def __init__(self, path: Path) -> None:
        folder = _marks(path)
        folder.mkdir(mode=0o700, exist_ok=True)
        pid = os.getpid()
        self.file = folder / f"{pid}-{_start_time(pid)}"
        self.file.touch(mode=0o600)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.file.unlink()


def unclean(path: Path) -> list[Path]:
    """Marks of processes that died with the catalog open (a crash since)."""
    try:
        names = os.listdir(_marks(path))
    except OSError:
        return []
    return [_marks(path) / name for name in names if not _alive(name)]


def check_due(path: Path) -> str | None:
    """Why the file at ``path`` needs a check now, or None."""
    if unclean(path):
        return "an unclean shutdown"
    stamp = _stamp(path)
    try:
        st = stamp.stat()
        inode = int(stamp.read_text("ascii") or 0)
        current = os.stat(path).st_ino
    except (OSError, ValueError):
        return "never checked"
    if inode != current:
        return "replaced since its last check"
    if time.time() - st.st_mtime > CHECK_EVERY_SECONDS:
        return "its periodic check"
    return None


def checked(path: Path, stale: list[Path] | None = None) -> None:
    """The file was found sound: stamp it, and forget the dead marks seen before."""
    with contextlib.suppress(OSError):
        tmp = Path(f"{_stamp(path)}.tmp")
        tmp.write_text(str(os.stat(path).st_ino), "ascii")
        os.chmod(tmp, 0o600)
        os.replace(tmp, _stamp(path))
    for mark in stale or ():
        with contextlib.suppress(OSError):
            mark.unlink()
