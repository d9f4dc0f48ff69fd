"""The picker's real terminal (tmux), for every test here that needs one."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tui.terminal import Terminal


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    if shutil.which("tmux") is None:
        pytest.fail(
            "tmux is not installed: run `sudo apt-get install tmux` (or `make test` as root)"
        )
    term = Terminal(f"convodex-test-{os.getpid()}-{tmp_path.name}", "pick")
    # A session that keeps the server up, so the picker starts in a running server.
    term.tmux("new-session", "-d", "-s", "keep", "sleep 600")
    try:
        yield term
    finally:
        term.tmux("kill-server")
