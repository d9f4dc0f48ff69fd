"""``convodex pick`` in a real terminal under tmux (SPEC L16): it draws, searches as
you type, and Enter hands the terminal to the session's agent (a stub on PATH)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers import CliRun, as_json, write_claude_session
from stub_agents import recorded, stub_agents

T0 = 1_767_225_600_000
DEADLINE = 30.0


class Terminal:
    """One tmux session on a private server: type into it, read its screen."""

    def __init__(self, socket: str, name: str) -> None:
        self.socket = socket
        self.name = name

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", self.name, *(["-l"] if literal else []), *keys)

    def wait(self, check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{self.screen()}")
            time.sleep(0.05)


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


def test_pick_in_a_real_terminal(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "shop"
    workspace.mkdir()
    root = tmp_path / "claude"
    session_id = "7e4a0000-0000-4000-8000-00000000beef"
    write_claude_session(
        root,
        session_id,
        str(workspace),
        [
            ("user", "why is the nightly invoice export slow?", T0),
            ("assistant", "The invoice query scans every row; add an index on issued_at.", T0 + 1),
        ],
    )
    as_json(cli("index", "--root", f"{root}:claude-code", "--json"))
    stub_env, record = stub_agents(tmp_path, "claude")
    env = {
        "PATH": stub_env["PATH"],
        "STUB_RECORD": str(record),
        "TERM": "xterm-256color",
        "HOME": os.environ["HOME"],
        "CONVODEX_HOME": os.environ["CONVODEX_HOME"],
        "CONVODEX_CACHE_HOME": os.environ["CONVODEX_CACHE_HOME"],
    }
    command = " ".join(
        [
            "env",
            *(shlex.quote(f"{k}={v}") for k, v in env.items()),
            shlex.quote(sys.executable),
            "-m convodex pick",
            f"--root {shlex.quote(f'{root}:claude-code')}",
            f"--cache-dir {shlex.quote(str(cache_dir))}",
            "; echo picker-exit=$?; sleep 60",
        ]
    )
    terminal.tmux("new-session", "-d", "-s", terminal.name, "-x", "140", "-y", "36", command)
    terminal.wait(lambda: "search your conversations" in terminal.screen(), "the picker")

    terminal.keys("invoice export", literal=True)
    terminal.wait(lambda: "1 hits in 1 sessions" in terminal.screen(), "the hit")
    assert "why is the nightly invoice export slow?" in terminal.screen()  # its title
    # The preview: the hit's ref, its resume command, the hit in its context.
    terminal.wait(lambda: "claude --resume" in terminal.screen(), "the preview")
    assert "#1 assistant" in terminal.screen()

    terminal.keys("Enter")
    terminal.wait(record.exists, "the agent to start")
    terminal.wait(lambda: "picker-exit=0" in terminal.screen(), "the picker to hand over")
    assert recorded(record) == {"argv": ["--resume", session_id], "cwd": str(workspace)}
