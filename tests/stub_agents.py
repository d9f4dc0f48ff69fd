"""Stub agent executables for resume tests: first on PATH, recording argv and cwd."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

STUB = """#!{python}
import json, os, sys
with open(os.environ["STUB_RECORD"], "w") as out:
    json.dump({{"argv": sys.argv[1:], "cwd": os.getcwd()}}, out)
"""


def stub_agents(tmp_path: Path, *names: str) -> tuple[dict[str, str], Path]:
    """Executables named like agents in ``tmp_path/bin``; the environment that puts them
    first on PATH, and the file each run records ``{argv, cwd}`` to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        exe = bin_dir / name
        exe.write_text(STUB.format(python=sys.executable), "utf-8")
        exe.chmod(0o755)
    record = tmp_path / "record.json"
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        STUB_RECORD=str(record),
    )
    return env, record


def recorded(record: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(record.read_text("utf-8"))
    return found


def run_convodex(env: dict[str, str], cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``convodex`` in a child process with this environment and cache dir."""
    return subprocess.run(
        [sys.executable, "-m", "convodex", *args, "--cache-dir", str(cache)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
