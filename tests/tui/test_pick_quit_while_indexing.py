"""Quitting ``convodex pick`` while it indexes a big history, in a real terminal (issue
24): Esc, or Ctrl-C's SIGINT, ends it at once with its status (0, 130) and no
traceback (before, the scheduler's stop waited for the run: up to 10 s for a helper
process still starting, then the listing's whole replay), and the index it leaves
is consistent: the next ``convodex index`` resumes it and finds every session once."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from big_history import big_history
from helpers import CliRun, as_json
from tui.terminal import Terminal, convodex_command, picker_env

SESSIONS = 60
INDEXING = re.compile(rf"\bindexing [1-9]\d*/{SESSIONS}\b")


@pytest.mark.parametrize("how", ["escape", "sigint"])
def test_quit_while_indexing_is_clean_and_the_index_resumes(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path, how: str
) -> None:
    root = tmp_path / "claude"
    big_history(root, SESSIONS, 1.0)
    args = ["pick", "--root", f"{root}:claude-code", "--cache-dir", str(cache_dir)]
    terminal.start(convodex_command(picker_env(), args, "echo picker-exit=$?; sleep 60"))
    terminal.ready()
    # Under way: some sessions committed, the rest still to read.
    terminal.wait(lambda s: bool(INDEXING.search(s)), "indexing under way")
    if how == "escape":
        terminal.keys("Escape")
        expected = 0
    else:
        shell = terminal.pane("pane_pid")
        picker = subprocess.run(
            ["pgrep", "-P", shell, "-f", "convodex pick"], capture_output=True, text=True
        )
        os.kill(int(picker.stdout.split()[0]), signal.SIGINT)
        expected = 130
    screen = terminal.wait_for("picker-exit=", "the picker to exit", deadline=20)
    assert f"picker-exit={expected}" in screen
    assert "Traceback" not in screen and "Error" not in screen
    if how == "sigint":
        assert "convodex pick: stopped (SIGINT)" in screen

    # What was committed stands; the next run reads the rest, each session once.
    as_json(cli("index", "--root", f"{root}:claude-code", "--json"))
    found = as_json(cli("search", "nightly", "--no-group", "--limit", "200", "--json"))
    progress = found["progress"]
    assert (progress["state"], progress["indexed"], progress["failed"]) == (
        "complete",
        SESSIONS,
        0,
    )
    sessions = [hit["sessionId"] for hit in found["hits"]]
    assert len(sessions) == len(set(sessions)) == SESSIONS
