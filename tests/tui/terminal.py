"""A real terminal for the picker's tests: one tmux session on a private server.

Everything waits on what the screen shows, with a generous deadline (CI is a busy
2-core machine), never on time: keys go in once the screen shows the picker ready for
them, and assertions read the screen a condition was seen on.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from helpers import CliRun, as_json, write_claude_session

DEADLINE = 60.0
T0 = 1_767_225_600_000
# The footer Textual draws once it has the screen (the first frame has none).
READY = "esc Quit"


class Terminal:
    """One tmux session on a private server: type into it, read its screen."""

    def __init__(self, socket: str, name: str) -> None:
        self.socket = socket
        self.name = name

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        return done.stdout

    def start(self, command: str, size: tuple[int, int] = (140, 36)) -> None:
        width, height = size
        self.tmux(
            "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), command
        )

    def pane(self, variable: str) -> str:
        """One of tmux's pane variables (``pane_pid`` …)."""
        return self.tmux("display-message", "-p", "-t", self.name, f"#{{{variable}}}").strip()

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def rows(self) -> list[str]:
        return self.screen().split("\n")

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", self.name, *(["-l"] if literal else []), *keys)

    def wait(self, check: Callable[[str], bool], what: str, deadline: float = DEADLINE) -> str:
        """The first screen ``check`` accepts (it is given the screen's text)."""
        end = time.monotonic() + deadline
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            if time.monotonic() > end:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{screen}")
            time.sleep(0.05)

    def wait_for(self, text: str, what: str | None = None, deadline: float = DEADLINE) -> str:
        return self.wait(lambda screen: text in screen, what or repr(text), deadline)

    def ready(self) -> str:
        """The picker has the screen (Textual's footer): keys now reach the app."""
        return self.wait_for(READY, "the picker")


def convodex_command(env: dict[str, str], args: list[str], after: str = "") -> str:
    """A shell line that runs convodex with exactly ``env`` and ``args``, then ``after``."""
    parts = [
        "env",
        "-i",
        *(shlex.quote(f"{k}={v}") for k, v in env.items()),
        shlex.quote(sys.executable),
        "-m",
        "convodex",
        *map(shlex.quote, args),
    ]
    return " ".join(parts) + (f"; {after}" if after else "")


def picker_env(**extra: str) -> dict[str, str]:
    """The environment the test process runs with, trimmed to what convodex reads."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "HOME": os.environ["HOME"],
        "CONVODEX_HOME": os.environ["CONVODEX_HOME"],
        "CONVODEX_CACHE_HOME": os.environ["CONVODEX_CACHE_HOME"],
    }
    env.update(extra)
    return env


def invoice_history(cli: CliRun, tmp_path: Path, session_id: str, workspace: Path) -> str:
    """One indexed Claude Code session about a slow invoice export; its ``--root``."""
    root = tmp_path / "claude"
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
    return f"{root}:claude-code"
