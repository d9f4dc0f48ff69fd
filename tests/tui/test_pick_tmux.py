"""``convodex pick`` in a real terminal under tmux (SPEC L16): it draws, searches as
you type, and Enter hands the terminal to the session's agent (a stub on PATH)."""

from __future__ import annotations

import os
import re
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


# Sequences that blank part of a screen, or all of it.
CLEARS = ("\x1b[2J", "\x1b[3J", "\x1b[J", "\x1b[0J", "\x1b[1J", "\x1bc", "\x1b[?1049l")
CONTROL = re.compile(r"\x1b\[[0-9;?$>=<]*[A-Za-z]|\x1b\][^\x07]*\x07|[\r\n]")
ROW = re.compile(r"\x1b\[(\d+);1H")
TEXTUAL_STARTED = "\x1b[?1000h"  # Textual's driver turns mouse reporting on first


def row_writes(stream: str) -> list[tuple[int, str]]:
    """(row, text) of every write that starts at a row's first column, in order."""
    parts = ROW.split(stream)
    return [
        (int(row), CONTROL.sub("", text))
        for row, text in zip(parts[1::2], parts[2::2], strict=True)
    ]


def replayed(
    terminal: Terminal, tmp_path: Path, name: str, output: str, size: tuple[int, int]
) -> list[str]:
    """The screen, with colours, after ``output`` is written to a fresh pane."""
    path = tmp_path / f"{name}.out"
    path.write_text(output, "utf-8")
    width, height = size
    terminal.tmux(
        "new-session",
        "-d",
        "-s",
        name,
        "-x",
        str(width),
        "-y",
        str(height),
        f"cat {path}; sleep 60",
    )

    def screen() -> str:
        return terminal.tmux("capture-pane", "-p", "-e", "-t", name)

    terminal.wait(lambda: "hits in" in screen(), f"the {name} replay")
    return screen().splitlines()


def test_first_results_before_textual_and_a_handover_without_flicker(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    """`convodex pick QUERY` draws its results before Textual has loaded; Textual's
    first frame then repeats them row for row, and nothing blanks the screen between."""
    root = tmp_path / "claude"
    write_claude_session(
        root,
        "7e4a0000-0000-4000-8000-00000000cafe",
        str(tmp_path),
        [
            ("user", "why is the nightly invoice export slow?", T0),
            ("assistant", "The invoice query scans every row; add an index.", T0 + 1),
        ],
    )
    as_json(cli("index", "--root", f"{root}:claude-code", "--json"))
    env = {
        "TERM": "xterm-256color",
        "HOME": os.environ["HOME"],
        "CONVODEX_HOME": os.environ["CONVODEX_HOME"],
        "CONVODEX_CACHE_HOME": os.environ["CONVODEX_CACHE_HOME"],
    }
    width, height = 120, 30
    record = tmp_path / "terminal.out"
    command = " ".join(
        [
            f"tmux -L {terminal.socket} wait-for go;",  # until the recording runs
            "env",
            *(shlex.quote(f"{k}={v}") for k, v in env.items()),
            shlex.quote(sys.executable),
            "-m convodex pick invoice",
            f"--root {shlex.quote(f'{root}:claude-code')}",
            f"--cache-dir {shlex.quote(str(cache_dir))}",
            "; echo picker-exit=$?; stty -a; sleep 60",
        ]
    )
    terminal.tmux(
        "new-session", "-d", "-s", terminal.name, "-x", str(width), "-y", str(height), command
    )
    terminal.tmux("pipe-pane", "-t", terminal.name, "-o", f"cat > {shlex.quote(str(record))}")
    terminal.tmux("wait-for", "-S", "go")
    terminal.wait(lambda: "esc Quit" in terminal.screen(), "Textual to take over")
    assert "2 hits in 1 sessions" in terminal.screen()
    stream = record.read_text("utf-8", "replace")

    assert stream.count("\x1b[?1049h") == 1  # the first frame's: Textual does not re-enter
    started = stream.index(TEXTUAL_STARTED)
    before = row_writes(stream[:started])
    drawn = {row: text for row, text in before}  # each row as the first frame left it
    textual = row_writes(stream[started:])[:height]
    assert [row for row, _ in textual] == list(range(1, height + 1)), "a full first frame"
    # The first frame had the results: the hit, its session, the status line.
    assert any("#1 assistant_text: The invoice query scans" in text for text in drawn.values())
    assert drawn[height - 1].startswith(" 2 hits in 1 sessions · ")
    # Textual's first frame shows the same rows; the footer comes after (it was blank).
    for row, text in textual[:-1]:
        assert text == drawn[row], f"row {row}:\nfirst frame |{drawn[row]}|\ntextual     |{text}|"
    assert drawn[height].strip() == "" and textual[-1][1].strip() == ""
    first_frame_end = list(ROW.finditer(stream, started))[height - 1].end()
    handover = stream[:first_frame_end]
    assert [c for c in CLEARS if c in handover] == [], "nothing blanks the screen in between"
    # And in the same colours: both frames replayed in fresh panes, captured with their
    # attributes (tmux writes equal cells alike, however they were written).
    ours = replayed(terminal, tmp_path, "ours", stream[:started], (width, height))
    theirs = replayed(terminal, tmp_path, "theirs", handover, (width, height))
    assert ours[: height - 1] == theirs[: height - 1]

    terminal.keys("Escape")
    terminal.wait(lambda: "picker-exit=0" in terminal.screen(), "the picker to quit")
    # The terminal's own settings are back: it echoes and reads lines again.
    settings = terminal.screen().split("picker-exit=0", 1)[1]
    assert re.search(r"(?<![-\w])echo(?!\w)", settings) and re.search(r"(?<![-\w])icanon", settings)
