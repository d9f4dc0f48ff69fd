"""SPEC X10: SIGINT and SIGTERM end every long-running command (serve, make run, index,
mcp; the picker in tests/tui) with one line and the conventional status (130, 143),
no traceback from any process it started, and no process left behind.

Real processes, real signals: each command runs in a process group of its own and the
signal goes to the whole group, as the terminal's Ctrl-C does (the worker and helper
processes get it too), or to the command alone, as ``kill`` does.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from big_history import big_history
from helpers import write_claude_session

DEADLINE = 60.0
T0 = 1_767_225_600_000
REPO = Path(__file__).resolve().parent.parent


def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def group(pgid: int) -> list[str]:
    """The live processes of a process group (their command lines); zombies are dead."""
    done = subprocess.run(
        ["ps", "-o", "stat=,args=", "-g", str(pgid)], capture_output=True, text=True, check=False
    )
    rows = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return [row.split(None, 1)[1] for row in rows if not row.startswith("Z")]


# A command starts as a terminal's shell starts it, with SIGINT and SIGTERM at their
# defaults, whatever the runner's: a test run started in the background of a shell
# without job control ignores SIGINT, and make, which keeps an ignored signal ignored,
# then outlived the Ctrl-C these tests send.
AS_FROM_A_TERMINAL = [
    sys.executable,
    "-c",
    "import os, signal, sys\n"
    "for sig in (signal.SIGINT, signal.SIGTERM): signal.signal(sig, signal.SIG_DFL)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])",
]


class Command:
    """A command in its own process group, its output in files."""

    def __init__(self, argv: list[str], tmp_path: Path, env: dict[str, str]) -> None:
        self.out = tmp_path / "out.txt"
        self.err = tmp_path / "err.txt"
        with self.out.open("wb") as out, self.err.open("wb") as err:
            self.process = subprocess.Popen(
                [*AS_FROM_A_TERMINAL, *argv],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,
            )

    @property
    def pgid(self) -> int:
        return self.process.pid

    def helpers(self, marker: str = "multiprocessing.spawn") -> int:
        return sum(marker in row for row in group(self.pgid))

    def stop(self, signum: int, whole_group: bool) -> tuple[int, str]:
        """Send ``signum``; the exit status and stderr once every process is gone."""
        if whole_group:
            os.killpg(self.pgid, signum)
        else:
            self.process.send_signal(signum)
        status = self.process.wait(DEADLINE)
        until(lambda: not group(self.pgid), "every process of the command to end")
        return status, self.err.read_text("utf-8", "replace")


@contextmanager
def command(argv: list[str], tmp_path: Path, accelerators: str | None = None) -> Iterator[Command]:
    """``accelerators``: the worker and helper processes some tests stop are
    accelerators, asked for (``CONVODEX_ACCELERATORS``) whatever the suite runs with."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if accelerators is not None:
        env["CONVODEX_ACCELERATORS"] = accelerators
    run = Command(argv, tmp_path, env)
    try:
        yield run
    finally:
        if run.process.poll() is None:
            os.killpg(run.pgid, signal.SIGKILL)
            run.process.wait()
        if run.process.stdin is not None:
            run.process.stdin.close()


def convodex(*args: str) -> list[str]:
    return [sys.executable, "-m", "convodex", *args]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/status", timeout=5).is_success
    except httpx.HTTPError:
        return False


def one_stop_line(stderr: str, name: str, signum: int) -> None:
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines[-1:] == [f"convodex {name}: stopped ({signal.Signals(signum).name})"], stderr


def a_session(tmp_path: Path) -> str:
    root = tmp_path / "claude"
    write_claude_session(
        root,
        "5e55e000-0000-4000-8000-000000000001",
        str(tmp_path),
        [("user", "the flaky deploy step", T0), ("assistant", "Retry it once.", T0 + 1)],
    )
    return f"{root}:claude-code"


SIGNALS = [
    pytest.param(signal.SIGINT, True, id="ctrl-c"),
    pytest.param(signal.SIGTERM, False, id="kill"),
    pytest.param(signal.SIGTERM, True, id="kill-group"),
]


@pytest.mark.parametrize(("signum", "whole_group"), SIGNALS)
def test_serve_with_search_workers_stops_cleanly(
    tmp_path: Path, cache_dir: Path, signum: int, whole_group: bool
) -> None:
    """Before: Ctrl-C printed a KeyboardInterrupt traceback from each search worker,
    and serve exited 0."""
    port = free_port()
    argv = convodex("serve", "--port", str(port), "--root", a_session(tmp_path))
    argv += ["--cache-dir", str(cache_dir), "--search-workers", "2"]
    with command(argv, tmp_path, "on") as serve:
        until(lambda: answers(port), "the server")
        until(lambda: serve.helpers() >= 2, "the search workers")
        status, stderr = serve.stop(signum, whole_group)
    assert status == 128 + signum
    one_stop_line(stderr, "serve", signum)


def indexing(port: int) -> bool:
    """Whether serve's background indexing is under way: some sources in, not all."""
    try:
        state = httpx.get(f"http://127.0.0.1:{port}/status", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return False
    return bool(state["state"] == "indexing" and 0 < state["indexed"] < state["total"])


def test_serve_stops_cleanly_while_it_indexes(tmp_path: Path, cache_dir: Path) -> None:
    """Ctrl-C while a big history indexes (issue 24): the run stops at its next batch
    boundary, serve exits with 130 and one line; the next run resumes the index."""
    root = tmp_path / "claude"
    big_history(root, 60, 1.0)
    port = free_port()
    argv = convodex("serve", "--port", str(port), "--root", f"{root}:claude-code")
    argv += ["--cache-dir", str(cache_dir)]
    with command(argv, tmp_path) as serve:
        until(lambda: indexing(port), "indexing under way")
        status, stderr = serve.stop(signal.SIGINT, True)
    assert status == 128 + signal.SIGINT
    one_stop_line(stderr, "serve", signal.SIGINT)
    index = [*convodex("index", "--root", f"{root}:claude-code", "--cache-dir", str(cache_dir))]
    done = subprocess.run(index, capture_output=True, text=True, timeout=DEADLINE, check=False)
    assert done.returncode == 0, done.stderr
    search = convodex("search", "nightly", "--no-group", "--limit", "200", "--json")
    found = subprocess.run(
        [*search, "--cache-dir", str(cache_dir)], capture_output=True, text=True, timeout=DEADLINE
    )
    hits = json.loads(found.stdout)["hits"]
    assert len({hit["sessionId"] for hit in hits}) == len(hits) == 60


@pytest.mark.parametrize(("signum", "whole_group"), SIGNALS[:2])
def test_make_run_stops_cleanly(
    tmp_path: Path, signum: int, whole_group: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make run``: convodex's line, make's own status (it dies of the signal), and no
    ``make: *** … Error 130`` after it."""
    home = tmp_path / "empty-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    # The venv the tests run in is the one make would use: no install.
    argv = ["make", "--no-print-directory", "-C", str(REPO), "run"]
    argv += [f"BIN={Path(sys.executable).parent}", "RUN_STAMP="]
    port = free_port()
    argv += [f"SERVE_ARGS=--port {port} --search-workers 2"]
    with command(argv, tmp_path, "on") as make:
        until(lambda: answers(port), "the server")
        until(lambda: make.helpers() >= 2, "the search workers")
        status, stderr = make.stop(signum, whole_group)
    assert status == -signum  # make dies of it: a shell shows 130 / 143
    one_stop_line(stderr, "serve", signum)
    assert "make:" not in stderr


@pytest.mark.parametrize(("signum", "whole_group"), SIGNALS)
def test_index_with_its_helper_process_stops_cleanly(
    tmp_path: Path, cache_dir: Path, signum: int, whole_group: bool
) -> None:
    """Signalled while its helper process starts (imports): before, the helper printed
    a KeyboardInterrupt traceback and ``index`` said "Aborted!" with status 1."""
    root = tmp_path / "claude"
    big_history(root, 30, 0.9)
    argv = convodex("index", "--root", f"{root}:claude-code", "--cache-dir", str(cache_dir))
    # Eager: a helper process on this run whatever the CPUs.
    with command(argv, tmp_path, "eager") as index:
        until(lambda: index.helpers() >= 1, "the helper process")
        status, stderr = index.stop(signum, whole_group)
    assert status == 128 + signum
    one_stop_line(stderr, "index", signum)


@pytest.mark.parametrize(("signum", "whole_group"), SIGNALS[:2])
def test_mcp_stops_cleanly(tmp_path: Path, cache_dir: Path, signum: int, whole_group: bool) -> None:
    argv = convodex("mcp", "--root", a_session(tmp_path), "--cache-dir", str(cache_dir))
    with command(argv, tmp_path) as mcp:
        assert mcp.process.stdin is not None
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        }
        mcp.process.stdin.write(json.dumps(hello).encode() + b"\n")
        mcp.process.stdin.flush()
        until(lambda: b'"id":1' in mcp.out.read_bytes(), "the server's answer")
        status, stderr = mcp.stop(signum, whole_group)
    assert status == 128 + signum
    one_stop_line(stderr, "mcp", signum)
