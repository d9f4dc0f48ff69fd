"""``convodex pick`` on a new machine, in a real terminal (tmux): a fresh catalog of a
big history is indexed in the background while the picker runs (the helper-process
path ``serve`` takes), and ``ref=$(convodex pick --print)`` draws at the terminal's
size although its standard output is a pipe."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from helpers import CliRun
from tui.terminal import Terminal, convodex_command, invoice_history, picker_env

WORDS = [f"w{n:x}ord" for n in range(4000)]


def big_history(root: Path, sessions: int, megabytes_each: float) -> Path:
    """Claude Code sessions of plain prose; the newest one says ``zebracorn`` once."""
    draw = random.Random(7)
    workspace = "/work/shop"
    folder = root / workspace.strip("/").replace("/", "-")
    folder.mkdir(parents=True)
    newest = folder
    for n in range(sessions):
        session_id = f"b1900000-0000-4000-8000-{n:012d}"
        path = folder / f"{session_id}.jsonl"
        lines, size, parent = [], 0, None
        first = "the nightly zebracorn export" if n == sessions - 1 else "the nightly export"
        k = 0
        while size < megabytes_each * 1024 * 1024:
            role = "user" if k % 2 == 0 else "assistant"
            text = first if k == 0 else " ".join(draw.choices(WORDS, k=400))
            content: object = text if role == "user" else [{"type": "text", "text": text}]
            uuid = f"{session_id}-{k}"
            line = json.dumps(
                {
                    "type": role,
                    "uuid": uuid,
                    "parentUuid": parent,
                    "sessionId": session_id,
                    "cwd": workspace,
                    "timestamp": f"2026-01-{1 + n % 28:02d}T10:{k % 60:02d}:00.000Z",
                    "message": {"role": role, "content": content},
                }
            )
            lines.append(line + "\n")
            size += len(line) + 1
            parent, k = uuid, k + 1
        path.write_text("".join(lines), "utf-8")
        newest = path
    return newest


def test_pick_indexes_a_big_fresh_catalog_in_the_background(
    terminal: Terminal, cache_dir: Path, tmp_path: Path
) -> None:
    """Over the helper process's threshold (24 MiB): before the fix the helper could not
    start under Textual (its stderr has no file descriptor), the scan failed, and only
    the rescan a minute later tried again: ``indexing 0/30`` and no hits meanwhile."""
    root = tmp_path / "claude"
    big_history(root, 30, 0.9)
    env = picker_env()
    args = ["pick", "--root", f"{root}:claude-code", "--cache-dir", str(cache_dir)]
    terminal.start(convodex_command(env, args, "echo picker-exit=$?; sleep 60"))
    terminal.ready()
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
    assert rows[44].lstrip().startswith("esc Quit"), "the footer on the terminal's last row"
    assert re.search(r"\b2 hits in 1 sessions?\b", rows[43]), "the status line above it"
    # Nothing of the first frame is left: every row is Textual's, full width.
    assert rows[0].startswith("▊") and rows[0].rstrip().endswith("▎") and len(rows[0]) == 160
    terminal.keys("Enter")
    screen = terminal.wait_for("picked=", "the ref")
    assert f"picked={session_id}#" in screen
