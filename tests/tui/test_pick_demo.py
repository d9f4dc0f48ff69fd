"""``convodex pick`` over the bundled demo's catalog says "demo" in its status line
(issue 24 item 3: the demo stays a demo); over the user's own catalog it does not."""

from __future__ import annotations

import re
from pathlib import Path

from convodex import config
from convodex.catalog.db import recorded_roots
from convodex.catalog.demo import DEMO_ROOT
from convodex.tui.view import MIXED_LABEL
from helpers import CliRun
from tui.terminal import Terminal, convodex_command, invoice_history, picker_env


def status_line(screen: str) -> str:
    rows = [row for row in screen.split("\n") if " · " in row and "agent: " in row]
    assert rows, screen
    return rows[-1].strip()


def test_the_picker_says_demo(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    out = cli("demo")
    assert out.exit_code == 0, out.output
    args = ["pick", "migration", "--no-index", "--cache-dir", str(cache_dir / "demo")]
    terminal.start(convodex_command(picker_env(), args, "echo picker-exit=$?; sleep 60"))
    terminal.ready()
    screen = terminal.wait(lambda s: bool(re.search(r"\b[1-9]\d* hits? in ", s)), "the demo's hits")
    assert status_line(screen).startswith("demo · ")
    terminal.keys("Escape")
    terminal.wait_for("picker-exit=0", "the picker to quit")


def test_the_picker_over_your_own_sessions_does_not(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    root = invoice_history(cli, tmp_path, "7e4a0000-0000-4000-8000-00000000beef", tmp_path)
    args = ["pick", "invoice", "--no-index", "--root", root, "--cache-dir", str(cache_dir)]
    terminal.start(convodex_command(picker_env(), args, "echo picker-exit=$?; sleep 60"))
    terminal.ready()
    screen = terminal.wait(lambda s: bool(re.search(r"\b[1-9]\d* hits? in ", s)), "the hits")
    assert not status_line(screen).startswith("demo")
    terminal.keys("Escape")
    terminal.wait_for("picker-exit=0", "the picker to quit")


def test_the_picker_with_no_sessions_shows_the_demo(
    terminal: Terminal, cache_dir: Path, tmp_path: Path
) -> None:
    """No ``--root`` and no session under an empty HOME: like ``make run`` and ``serve``,
    the picker indexes the bundled demo into its own catalog (``<cache>/demo``, never
    the user's) and says "demo" in its status line."""
    home = tmp_path / "empty-home"
    home.mkdir()
    env = picker_env(HOME=str(home))
    args = ["pick", "migration", "--cache-dir", str(cache_dir)]
    terminal.start(convodex_command(env, args, "echo picker-exit=$?; sleep 60"))
    terminal.ready()
    screen = terminal.wait(lambda s: bool(re.search(r"\b[1-9]\d* hits? in ", s)), "the demo's hits")
    assert status_line(screen).startswith("demo · ")
    assert "migrat" in screen.lower()
    terminal.keys("Escape")
    terminal.wait_for("picker-exit=0", "the picker to quit")
    assert not config.catalog_path(cache_dir).exists(), "the user's catalog stays untouched"
    assert recorded_roots(config.catalog_path(cache_dir / "demo")) == [DEMO_ROOT.resolve()]


def test_the_picker_over_a_catalog_the_demo_is_mixed_into_says_so(
    terminal: Terminal, cli: CliRun, cache_dir: Path, tmp_path: Path
) -> None:
    """An older version indexed the demo beside the user's own sessions: until a plain
    ``convodex index`` drops it, the picker says it is in there."""
    invoice_history(cli, tmp_path, "7e4a0000-0000-4000-8000-00000000beef", tmp_path)
    assert cli("index", "--root", str(DEMO_ROOT)).exit_code == 0
    args = ["pick", "invoice", "--no-index", "--cache-dir", str(cache_dir)]
    terminal.start(convodex_command(picker_env(), args, "echo picker-exit=$?; sleep 60"))
    terminal.ready()
    screen = terminal.wait(lambda s: bool(re.search(r"\b[1-9]\d* hits? in ", s)), "the hits")
    assert "nightly invoice export" in screen  # the user's own session
    assert status_line(screen).startswith(f"{MIXED_LABEL} · ")
    terminal.keys("Escape")
    terminal.wait_for("picker-exit=0", "the picker to quit")
