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


def timed(
    argv: list[str], env: dict[str, str] | None = None, stdin: bytes | None = None
) -> tuple[float, int, int, bytes, bytes]:
    """One whole process: its milliseconds, peak RSS (KiB, from wait4), exit status,
    stdout and stderr."""
    import os
    import subprocess
    import tempfile
    import time

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
        if stdin is not None and proc.stdin is not None:
            proc.stdin.write(stdin)
            proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        ms = (time.perf_counter() - started) * 1000
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return ms, int(usage.ru_maxrss), proc.returncode, out.read(), err.read()
