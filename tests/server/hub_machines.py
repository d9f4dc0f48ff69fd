"""Machines for the hub tests: each a HOME of its own (config, catalog, checkpoints)
running the real CLI in subprocesses, and its ``convodex serve`` when a test needs
the local page."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from convodex.server import Database
from convodex.server.teams import add_member, create_team
from convodex.web.server_app import create_app
from helpers import write_claude_session
from server.server_helpers import serving
from server_fixtures import People, cli_command, free_port

T0 = 1_750_000_000_000  # epoch ms
# A GitHub token's published shape: the library's redaction masks it.
SECRET = "ghp_" + "Zq7Xw2Lk9Pm4Nv6Bc8Rt1Ys3Hd5Jf0GaUe4W"
SHOWN = SECRET[:16]  # as much of it as a hub snippet holds
LOCAL_NOTE = "a local note about rollback and deploy"
NOWHERE = "http://127.0.0.1:1"  # privileged, outside the ephemeral range: nothing listens
UNREACHABLE = f"cannot reach the hub at {NOWHERE} (ConnectionRefusedError)"
SQLITE = pytest.mark.parametrize("db", ["sqlite"], indirect=True)


@dataclass(frozen=True)
class Machine:
    """One simulated machine: a HOME with its sessions, config and caches."""

    name: str
    home: Path

    @classmethod
    def at(cls, tmp_path: Path, name: str) -> Machine:
        (tmp_path / name / "sessions").mkdir(parents=True)
        return cls(name, tmp_path / name)

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.home),
            "CONVODEX_HOME": str(self.home / "data"),
            "CONVODEX_CACHE_HOME": str(self.home / "cache"),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "PYTHONWARNINGS": "ignore",
        }

    def configure(self, url: str, token: str, **extra: Any) -> None:
        lines = ["[hub]", f'url = "{url}"', f'token = "{token}"', f'machine = "{self.name}"']
        lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
        config = self.home / "config" / "convodex" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The real CLI as this machine's user; fails the test on a traceback."""
        done = subprocess.run(
            cli_command(*args), env=self.env(), capture_output=True, text=True, timeout=300
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def sync(self) -> dict[str, Any]:
        done = self.run("sync", "--root", str(self.sessions), "--json")
        assert done.returncode == 0, done.stderr
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    def write(self, session_id: str, cwd: str, *texts: str) -> Path:
        turns = [
            ("user" if n % 2 == 0 else "assistant", text, T0 + n * 1000)
            for n, text in enumerate(texts)
        ]
        return write_claude_session(self.sessions, session_id, cwd, turns)

    @contextmanager
    def serving(self, logs: Path) -> Iterator[str]:
        """``convodex serve`` over this machine's sessions; yields its URL once the
        catalog is indexed. Its stdout and stderr end up in ``logs``."""
        port = free_port()
        argv = cli_command("serve", "--port", str(port), "--root", str(self.sessions))
        with open(logs, "wb") as out:
            process = subprocess.Popen(
                [*argv, "--search-workers", "0"], env=self.env(), stdout=out, stderr=out
            )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                assert process.poll() is None, logs.read_text()
                assert time.monotonic() < deadline, "convodex serve did not index in time"
                try:
                    if httpx.get(url + "/status", timeout=5).json()["state"] == "complete":
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
            yield url
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)


@dataclass(frozen=True)
class Team:
    """Alice's laptop and Bob's box, both in team eng, both synced into the hub."""

    hub: str
    laptop: Machine
    box: Machine
    bob_token: str
    where: set[str]  # the hub hits' machine · agent · owner, as the page shows them


@pytest.fixture
def team(db: Database, people: People, tmp_path: Path) -> Iterator[Team]:
    create_team(db, "eng")
    add_member(db, "eng", "alice")
    add_member(db, "eng", "bob")
    laptop, box = Machine.at(tmp_path, "laptop"), Machine.at(tmp_path, "box")
    with serving(create_app(db)) as hub:
        # The laptop shares without redaction: what an agent reads is masked anyway.
        laptop.configure(hub, people.tokens["alice"], team="eng", redact=False)
        box.configure(hub, people.tokens["bob"], team="eng")
        laptop.write("s-1", "/work/app", f"rollback the deploy with token {SECRET}", "ok")
        box.write("s-2", "/work/app", LOCAL_NOTE, "fine")
        assert laptop.sync()["sent"] == 1
        assert box.sync()["sent"] == 1
        where = {
            f"laptop · claude-code · {people.alice.id}",
            f"box · claude-code · {people.bob.id}",
        }
        yield Team(hub, laptop, box, people.tokens["bob"], where)
