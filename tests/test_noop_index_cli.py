"""``convodex index`` with nothing changed answers before click loads (issue 28,
``cli/noop_index``): the same report the click command prints, in a real process;
whatever changed, and every other form of the command, is still the click command's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from convodex.cli.main import main
from helpers import append_lines, write_session

# A real process through the console script's entry point; says on stderr whether
# click was loaded by the time it exits.
PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('click loaded:', 'click' in sys.modules, file=sys.stderr))\n"
    "from convodex.__main__ import main\n"
    "sys.argv[0] = 'convodex'\n"
    "main()\n"
)


def history(root: Path) -> None:
    write_session(root, "s-one", [{"role": "user", "content": "the kettle whistles"}])
    write_session(root, "s-two", [{"role": "user", "content": "a quiet harbour"}], subdir="p")
    at = time.time() - 60  # not being written: a scan right after a write cannot tell
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.utime(folder, (at, at))


def convodex(*args: str) -> tuple[int, str, str, bool]:
    """Exit status, stdout, stderr (less the probe's line) and whether click loaded."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120
    )
    err, _, probe = done.stderr.rpartition("click loaded: ")
    return done.returncode, done.stdout, err, probe.strip() == "True"


def without_seconds(out: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(out)
    del report["stats"]["seconds"]
    return report


def test_a_noop_index_prints_the_commands_report_without_click(root: Path, cache_dir: Path) -> None:
    history(root)
    args = ("index", "--root", str(root), "--cache-dir", str(cache_dir))
    code, out, _, _ = convodex(*args, "--json")
    assert code == 0 and json.loads(out)["stats"]["indexed"] == 2
    code, out, err, click_loaded = convodex(*args, "--json")
    assert (code, err, click_loaded) == (0, "", False)
    command = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert without_seconds(out) == without_seconds(command.output)
    assert without_seconds(out)["stats"]["sources"] == 2
    code, out, err, click_loaded = convodex(*args)
    assert (code, err, click_loaded) == (0, "", False)
    assert out.startswith("nothing changed: 2 sources, 0 failed (")


def test_a_change_after_a_noop_is_indexed_by_the_command(root: Path, cache_dir: Path) -> None:
    history(root)
    args = ("index", f"--root={root}", f"--cache-dir={cache_dir}", "--json")
    convodex(*args)
    assert convodex(*args)[3] is False  # the no-op
    append_lines(root / "s-one.jsonl", [{"role": "user", "content": "a lighthouse keeper"}])
    code, out, _, click_loaded = convodex(*args)
    assert (code, click_loaded) == (0, True)
    assert json.loads(out)["stats"]["indexed"] == 1
    write_session(root, "s-three", [{"role": "user", "content": "an orchard"}], subdir="p")
    code, out, _, click_loaded = convodex(*args)
    assert (code, click_loaded, json.loads(out)["stats"]["indexed"]) == (0, True, 1)


def test_other_forms_of_index_are_the_click_commands(root: Path, cache_dir: Path) -> None:
    history(root)
    cache = ("--cache-dir", str(cache_dir))
    convodex("index", "--root", str(root), *cache)
    code, out, _, click_loaded = convodex("index", "--root", str(root), *cache, "--help")
    assert (code, click_loaded) == (0, True) and out.startswith("Usage: convodex index")
    code, _, err, click_loaded = convodex("index", *cache, "--root")
    assert (code, click_loaded) == (2, True) and "requires an argument" in err
    code, _, err, _ = convodex("index", "--root", str(root / "nowhere"), *cache)
    assert code == 1 and err.strip() == f"error: {root / 'nowhere'}: root is not a directory"
