"""Shared by the local-history adversarial tests (``test_local_*.py``): the real CLI in a
subprocess, so a traceback or a hang is what a user would see, and small fault makers.

Plain helpers (no conftest in tests/adversarial: the server tests there have their own).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from convodex.config import catalog_path
from convodex.sqlite import sqlite3

CLI_TIMEOUT = 120.0


def convodex(
    *args: str,
    timeout: float = CLI_TIMEOUT,
    env: dict[str, str] | None = None,
    prelude: str = "",
    within: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """Run the real ``convodex`` in a new process; a hang fails at ``timeout``.

    ``prelude`` is Python run first in that process (a resource limit, a lowered
    threshold), before the CLI starts as ``convodex``; ``within`` is a command it runs
    under (``read_only_file_system``).
    """
    code = f"{prelude}\nimport sys\nfrom convodex.cli.main import main\n"
    code += "sys.argv[0] = 'convodex'\nmain()"
    return subprocess.run(
        [*within, sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    """What a user must never see: a Python traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    assert "Traceback" not in done.stdout, done.stdout


def ok_json(done: subprocess.CompletedProcess[str]) -> Any:
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def line(role: str, text: str, **extra: Any) -> str:
    return json.dumps({"role": role, "content": text, **extra}) + "\n"


def hit_paths(result: dict[str, Any]) -> set[str]:
    return {Path(h["sessionPath"]).name for h in result["hits"]}


def integrity(cache: Path) -> str:
    db = sqlite3.connect(str(catalog_path(cache)))
    try:
        return ";".join(str(r[0]) for r in db.execute("PRAGMA integrity_check"))
    finally:
        db.close()


def source_states(cache: Path) -> dict[str, tuple[str, str | None]]:
    """(health, error class) of every source by file name, read without convodex."""
    db = sqlite3.connect(str(catalog_path(cache)))
    try:
        rows = db.execute("SELECT path, health, error_class FROM sources").fetchall()
    finally:
        db.close()
    return {Path(path).name: (health, error) for path, health, error in rows}


@contextlib.contextmanager
def released_fifo(path: Path) -> Iterator[Path]:
    """A FIFO at ``path``; on exit any reader stuck opening it is let go (EOF), so a
    failing test cannot leave threads blocked forever."""
    os.mkfifo(path)
    try:
        yield path
    finally:
        for _ in range(50):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno in (errno.ENXIO, errno.ENOENT):
                    break  # no reader waiting (or it is gone)
                raise
            os.close(fd)


def read_only_file_system(folder: Path) -> list[str]:
    """A command prefix: what follows runs with ``folder`` on a read-only file system
    (a read-only bind mount, in a user and mount namespace of its own)."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.fail(
            "unshare and mount are missing: install util-linux (apt-get install util-linux)"
        )
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(
            "unshare -rm failed: this kernel forbids user namespaces"
            f" (sysctl kernel.unprivileged_userns_clone=1): {probe.stderr.strip()}"
        )
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"'
    return ["unshare", "-rm", "sh", "-c", script, "sh", str(folder)]


def limited(max_bytes: int) -> str:
    """Prelude: files this process writes may not grow past ``max_bytes``; a write past
    it fails (SIGXFSZ ignored, as a shell's ``ulimit -f`` with a trap would)."""
    return (
        "import resource, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({max_bytes}, {max_bytes}))"
    )


def words(n: int) -> str:
    return " ".join(f"token{n}x{k}" for k in range(400))
