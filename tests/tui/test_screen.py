"""The terminal before Textual (``convodex.tui.screen``) on a real pseudo-terminal: the
alternate screen, no echo while the first frame is up (early keys wait for the app),
and everything given back when the app never took over."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time

DEADLINE = 30.0
PROBE = """
import termios
from convodex.tui.screen import FirstFrame, search_box

def echo():
    return bool(termios.tcgetattr(2)[3] & termios.ECHO)  # the terminal stderr is on

screen = FirstFrame.start()
print("started", screen is not None, echo(), flush=True)
if screen is not None:
    print("size", screen.width, screen.height, flush=True)
    screen.paint(search_box(screen.width, "flaky test"))
    screen.close()
print("closed", echo(), flush=True)
"""


def in_terminal(
    code: str, stdin_is_terminal: bool = True, term: str = "xterm-256color"
) -> tuple[str, str]:
    """Runs ``code`` with stdin and stderr on a new 80x20 pseudo-terminal: (what it wrote
    to the terminal, its stdout)."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 20, 80, 0, 0))
    env = {**os.environ, "TERM": term}
    stdin = follower if stdin_is_terminal else subprocess.DEVNULL
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=stdin, stderr=follower, stdout=subprocess.PIPE, env=env
    ) as proc:
        os.close(follower)
        written = b""
        deadline = time.monotonic() + DEADLINE
        while True:
            assert time.monotonic() < deadline, f"no end; so far: {written!r}"
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the last end of the terminal closed
                    break
                if not chunk:
                    break
                written += chunk
            elif proc.poll() is not None:
                break
        assert proc.stdout is not None
        out = proc.stdout.read().decode()
        assert proc.wait(DEADLINE) == 0, out
    os.close(leader)
    return written.decode("utf-8", "replace"), out


def test_the_first_frame_quiets_the_terminal_and_gives_it_back() -> None:
    written, out = in_terminal(PROBE)
    assert out.splitlines() == ["started True False", "size 80 20", "closed True"]
    # The alternate screen without a cursor, the search box with the query, then the
    # way back: the main screen, the cursor, line wrapping.
    enter = written.index("\x1b[?1049h")
    box = written.index("flaky test")
    leave = written.index("\x1b[?1049l")
    assert enter < written.index("\x1b[?25l") < box < leave
    assert "▊" + "▔" * 78 + "▎" in written.replace("\x1b[0;35m", "").replace("\x1b[0;7;35m", "")
    assert "\x1b[?25h" in written[leave - 20 :] and "\x1b[?7h" in written[box:]


def test_no_first_frame_without_a_terminal_to_draw_on() -> None:
    # Input from elsewhere, or a terminal that draws nothing: the app alone draws.
    for stdin_is_terminal, term in ((False, "xterm-256color"), (True, "dumb")):
        written, out = in_terminal(PROBE, stdin_is_terminal, term)
        assert out.splitlines() == ["started False True", "closed True"], out
        assert "\x1b[?1049h" not in written
