"""Issue 12, item 12: an index helper whose parent is killed exits quietly.

``convodex index`` reads and tokenizes in a helper process while it commits. When the
parent died (SIGKILL, OOM killer), the helper's next send failed and it printed a
``BrokenPipeError`` traceback on the terminal the user had left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import corpus
from convodex.config import catalog_path
from convodex.sqlite import sqlite3
from live_server import wait_for
from procs import children, running

# The stock thresholds start a helper only on bulk runs: the accelerators at work at any
# size (``eager``, whatever the suite runs with) give a helper for any run, and small
# commit groups keep it busy while the parent commits.
SMALL_COMMITS = (
    "import sys; import convodex.catalog.indexer as i; i.COMMIT_BYTES = 64 * 1024; "
    "from convodex.cli.main import main; sys.argv[0] = 'convodex'; main()"
)
EAGER = dict(os.environ, CONVODEX_ACCELERATORS="eager")


def revision(cache: Path) -> int:
    path = catalog_path(cache)
    if not path.exists():
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        row = db.execute("SELECT value FROM catalog_meta WHERE key = 'revision'").fetchone()
        return int(row[0]) if row else 0
    except sqlite3.OperationalError:
        return 0  # not created yet
    finally:
        db.close()


def test_helper_exits_quietly_when_its_parent_is_killed(tmp_path: Path) -> None:
    root = corpus.cached("native", 6, 12).out
    cache = tmp_path / "cache"
    # As a context manager: its stderr pipe is closed however the test ends (a failed
    # wait used to leave it to the garbage collector: an unraisable ResourceWarning,
    # "FileIO", failing whichever later test was running).
    with subprocess.Popen(
        [sys.executable, "-c", SMALL_COMMITS, "index", "--root", root, "--cache-dir", str(cache)],
        env=EAGER,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            helpers: list[int] = []

            def helper_running() -> bool:
                helpers[:] = children(proc.pid)
                return bool(helpers) and revision(cache) >= 2

            wait_for(helper_running, timeout=60)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            wait_for(lambda: not any(running(pid) for pid in helpers), timeout=30)
            _, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert "Traceback" not in stderr, stderr
    assert "BrokenPipeError" not in stderr, stderr
    assert stderr == ""
