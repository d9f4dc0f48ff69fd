"""``convodex pick`` in a real terminal under tmux (SPEC L16): it draws, searches as
you type, and Enter hands the terminal to the session's agent (a stub on PATH)."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path

from helpers import CliRun, as_json, write_claude_session
from stub_agents import recorded, stub_agents
from tui.terminal import DEADLINE, Terminal, convodex_command, invoice_history, picker_env

T0 = 1_767_225_600_000
# The status line's count, however its plurals are spelled.
HITS = re.compile(r"\b1 hits? in 1 sessions?\b")
TWO_HITS = re.compile(r"\b2 hits in 1 sessions? · ")


def test_pick_in_a_real_terminal(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "shop"
    workspace.mkdir()
    session_id = "7e4a0000-0000-4000-8000-00000000beef"
    root = invoice_history(cli, tmp_path, session_id, workspace)
    stub_env, record = stub_agents(tmp_path, "claude")
    env = picker_env(PATH=stub_env["PATH"], STUB_RECORD=str(record))
    args = ["pick", "--root", root, "--cache-dir", str(cache_dir)]
    terminal.start(convodex_command(env, args, "echo picker-exit=$?; sleep 60"))
    terminal.ready()

    terminal.keys("invoice export", literal=True)
    screen = terminal.wait(lambda s: bool(HITS.search(s)), "the hit")
    assert "why is the nightly invoice export slow?" in screen  # its title
    # The preview: the hit's ref, its resume command, the hit in its context.
    screen = terminal.wait_for("claude --resume", "the preview")
    assert "#1 assistant" in screen

    terminal.keys("Enter")
    terminal.wait(lambda _: record.exists(), "the agent to start")
    terminal.wait_for("picker-exit=0", "the picker to hand over")
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


def recorded_frames(record: Path, height: int) -> str:
    """What the terminal was sent, once it holds Textual's whole first frame."""
    deadline = time.monotonic() + DEADLINE
    while True:
        stream = record.read_text("utf-8", "replace") if record.exists() else ""
        started = stream.find(TEXTUAL_STARTED)
        if started >= 0 and len(row_writes(stream[started:])) >= height:
            return stream
        assert time.monotonic() < deadline, "timed out waiting for Textual's first frame"
        time.sleep(0.05)


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
        f"cat {path}; tmux -L {terminal.socket} wait-for -S {name}; sleep 60",
    )
    terminal.tmux("wait-for", name)  # until the whole of it is written
    return terminal.tmux("capture-pane", "-p", "-e", "-t", name).splitlines()


def test_first_results_before_textual_and_a_handover_without_flicker(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    """`convodex pick QUERY` draws its results before Textual has loaded; Textual's
    first frame then repeats them row for row, and nothing blanks the screen between."""
    root = invoice_history(cli, tmp_path, "7e4a0000-0000-4000-8000-00000000cafe", tmp_path)
    # The first frame waits for the first search however slow a busy machine makes it.
    env = picker_env(CONVODEX_PICK_FIRST_WAIT_MS="120000")
    width, height = 120, 30
    record = tmp_path / "terminal.out"
    args = ["pick", "invoice", "--root", root, "--cache-dir", str(cache_dir)]
    command = convodex_command(env, args, "echo picker-exit=$?; stty -a; sleep 60")
    # Until the recording runs.
    terminal.start(f"tmux -L {terminal.socket} wait-for go; {command}", (width, height))
    terminal.tmux("pipe-pane", "-t", terminal.name, "-o", f"cat > {shlex.quote(str(record))}")
    terminal.tmux("wait-for", "-S", "go")
    terminal.ready()
    terminal.wait(lambda s: bool(TWO_HITS.search(s)), "the hits")
    stream = recorded_frames(record, height)

    assert stream.count("\x1b[?1049h") == 1  # the first frame's: Textual does not re-enter
    started = stream.index(TEXTUAL_STARTED)
    before = row_writes(stream[:started])
    drawn = {row: text for row, text in before}  # each row as the first frame left it
    textual = row_writes(stream[started:])[:height]
    assert [row for row, _ in textual] == list(range(1, height + 1)), "a full first frame"
    # The first frame had the results: the hit, its session, the status line.
    assert any("#1 assistant_text: The invoice query scans" in text for text in drawn.values())
    assert TWO_HITS.match(drawn[height - 1].lstrip())
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
    screen = terminal.wait(lambda s: "picker-exit=0" in s and "icanon" in s, "the picker to quit")
    # The terminal's own settings are back: it echoes and reads lines again.
    settings = screen.split("picker-exit=0", 1)[1]
    assert re.search(r"(?<![-\w])echo(?!\w)", settings) and re.search(r"(?<![-\w])icanon", settings)


def test_show_opens_at_the_hit_and_comes_back(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    """Ctrl-S pages the session opened at the hit's message (before: ``s`` opened
    ``less`` at message #0 and then dropped to the shell); quitting the pager returns
    to the picker with the query as it was. Typed letters stay in the query."""
    turns = [
        ("user" if n % 2 == 0 else "assistant", f"step {n} of the long rollout", T0 + n)
        for n in range(80)
    ]
    turns[61] = ("assistant", "the flamingo migration finally passed", T0 + 61)
    root = tmp_path / "claude"
    write_claude_session(root, "10000000-0000-4000-8000-00000000face", str(tmp_path), turns)
    as_json(cli("index", "--root", f"{root}:claude-code", "--json"))
    env = picker_env(PAGER="less -R")
    args = ["pick", "--root", f"{root}:claude-code", "--cache-dir", str(cache_dir)]
    terminal.start(convodex_command(env, args, "echo picker-exit=$?; sleep 60"))
    terminal.ready()
    terminal.keys("flamingo", literal=True)
    terminal.wait(lambda s: bool(HITS.search(s)), "the hit")
    terminal.keys("C-s")
    screen = terminal.wait_for("▶ #61 assistant", "the pager at the hit")
    assert "step 3 of the long rollout" not in screen  # not at the session's start
    assert "esc Quit" not in screen  # the pager has the terminal
    terminal.keys("q")
    screen = terminal.ready()
    assert "flamingo" in screen and "picker-exit" not in screen
    terminal.keys(" se", literal=True)  # letters: the query's, no action
    terminal.wait_for("flamingo se", "the letters in the query")
    terminal.keys("Escape")
    terminal.wait_for("picker-exit=0", "the picker to quit")
