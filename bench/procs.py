"""Process-tree helpers from /proc, for benches and tests that watch the processes a
command starts (an index helper, a resource tracker). Imports nothing of convodex, so
a bench can time an older checkout with it."""

from __future__ import annotations

from pathlib import Path


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (an index helper, a resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
