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
) -> tuple[float, int, bytes, bytes]:
    """One whole process: its milliseconds, exit status, stdout and stderr."""
    import subprocess
    import time

    started = time.perf_counter()
    if stdin is None:
        done = subprocess.run(
            argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False
        )
    else:
        done = subprocess.run(argv, env=env, input=stdin, capture_output=True, check=False)
    return (time.perf_counter() - started) * 1000, done.returncode, done.stdout, done.stderr


def peak_rss_kb(argv: list[str], env: dict[str, str] | None = None) -> int:
    """The peak RSS of one run of ``argv`` (KiB), as GNU time reports it: its wait4 is
    of a child forked from a small process (a child forked from this bench would count
    the bench's own pages it inherited before exec)."""
    import shutil
    import subprocess
    import tempfile

    time_tool = shutil.which("time", path="/usr/bin:/bin")
    if time_tool is None:
        raise SystemExit("error: GNU time is not installed (apt-get install time)")
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run(
            [time_tool, "-f", "%M", "-o", out.name, *argv],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        return int(out.read().split()[-1])
