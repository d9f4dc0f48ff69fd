"""``convodex pick`` on a new machine, in a real terminal (tmux): a fresh catalog of a
big history is indexed in the background while the picker runs (the helper-process
path ``serve`` takes), and ``ref=$(convodex pick --print)`` draws at the terminal's
size although its standard output is a pipe."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from big_history import big_history
from helpers import CliRun
from test_clean_exits import group, until
from tui.terminal import Terminal, convodex_command, invoice_history, picker_env


def pick_a_big_fresh_history(terminal: Terminal, tmp_path: Path, cache_dir: Path) -> None:
    """The picker on a history past the helper process's threshold, never indexed."""
    root = tmp_path / "claude"
    big_history(root, 30, 0.9)
    env = picker_env()
    args = ["pick", "--root", f"{root}:claude-code", "--cache-dir", str(cache_dir)]
    terminal.start(convodex_command(env, args, "echo picker-exit=$?; sleep 60"))
    terminal.ready()


def test_pick_indexes_a_big_fresh_catalog_in_the_background(
    terminal: Terminal, cache_dir: Path, tmp_path: Path
) -> None:
    """Over the helper process's threshold (24 MiB): before the fix the helper could not
    start under Textual (its stderr has no file descriptor), the scan failed, and only
    the rescan a minute later tried again: ``indexing 0/30`` and no hits meanwhile."""
    pick_a_big_fresh_history(terminal, tmp_path, cache_dir)
    terminal.keys("zebracorn", literal=True)
    # Well before the minute's rescan: the first scan itself indexes.
    screen = terminal.wait(
        lambda s: bool(re.search(r"\b1 hits? in 1 sessions?\b", s)), "the hit", deadline=45
    )
    assert "the nightly zebracorn export" in screen
    terminal.keys("Escape")
    terminal.wait_for("picker-exit=0", "the picker to quit")


def test_pick_print_in_a_pipe_draws_at_the_terminal_size(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    """``ref=$(convodex pick --print)``: Textual's standard output is the pipe, yet it
    draws 160×45 (before the fix: 80×24 over the first frame's 160×45, whose columns
    and rows were left beside and below it)."""
    session_id = "7e4a0000-0000-4000-8000-00000000beef"
    root = invoice_history(cli, tmp_path, session_id, tmp_path)
    env = picker_env()
    args = ["pick", "--print", "invoice", "--root", root]
    args += ["--cache-dir", str(cache_dir), "--no-index"]
    command = convodex_command(env, args)
    terminal.start(f'ref=$({command}); echo "picked=$ref"; sleep 60', (160, 45))
    terminal.ready()
    rows = terminal.wait(lambda s: " · " in s.split("\n")[43], "the status line").split("\n")
    assert len(rows) >= 45
    assert "esc Quit" in rows[44], "the footer on the terminal's last row"
    assert re.search(r"\b2 hits in 1 sessions?\b", rows[43]), "the status line above it"
    # Nothing of the first frame is left: every row is Textual's, full width.
    assert rows[0].startswith("▊") and rows[0].rstrip().endswith("▎") and len(rows[0]) == 160
    terminal.keys("Enter")
    screen = terminal.wait_for("picked=", "the ref")
    assert f"picked={session_id}#" in screen


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["int", "term"])
def test_pick_stops_cleanly_on_a_signal_while_indexing(
    terminal: Terminal, cache_dir: Path, tmp_path: Path, signum: int
) -> None:
    """SPEC X10 for the picker: a signal while its helper process indexes ends it with
    one line and 128 + the signal, the terminal given back, nothing left running."""
    pick_a_big_fresh_history(terminal, tmp_path, cache_dir)
    shell = int(terminal.pane("pane_pid"))  # the picker, its helpers and the shell's sleep

    def ours() -> list[str]:
        return [row for row in group(shell) if "convodex" in row or "multiprocessing" in row]

    until(lambda: any("multiprocessing.spawn" in row for row in ours()), "the helper")
    picker = subprocess.run(
        ["pgrep", "-P", str(shell), "-f", "convodex pick"], capture_output=True, text=True
    )
    os.kill(int(picker.stdout.split()[0]), signum)
    screen = terminal.wait_for("picker-exit=", "the picker to exit")
    assert f"picker-exit={128 + signum}" in screen
    assert f"convodex pick: stopped ({signal.Signals(signum).name})" in screen
    assert "Traceback" not in screen
    until(lambda: not ours(), "the picker's helper processes to end")
