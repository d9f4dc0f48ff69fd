"""Fixtures and helpers for every conversation-server test (tests/server and the
server cases of tests/adversarial): a SQLite file and a real PostgreSQL for each case,
three accounts, and a real ``convodex server serve`` in a subprocess.

Test modules import the fixtures they use (``from server_fixtures import db``); the
PostgreSQL cluster is started once per test run whichever module asks first.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from convodex.server import Caller, Database, add_account, open_database
from pg import TempPostgres

TEMPLATE = "convodex_template"
BACKENDS = ("sqlite", "postgresql")
_names = itertools.count()


@functools.cache
def shared_cluster() -> TempPostgres:
    """One PostgreSQL cluster per test process, with a migrated template database."""
    pg = TempPostgres().start()
    atexit.register(pg.stop)
    with open_database(pg.create_database(TEMPLATE)) as db:
        db.migrate()
    return pg


@pytest.fixture(scope="session")
def pg_cluster() -> TempPostgres:
    return shared_cluster()


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A migrated, empty server database on each backend."""
    if request.param == "sqlite":
        database = open_database(f"sqlite:///{tmp_path / 'server.sqlite'}")
        database.migrate()
        yield database
        database.close()
        return
    pg: TempPostgres = request.getfixturevalue("pg_cluster")
    name = f"test_{os.getpid()}_{next(_names)}"
    database = open_database(pg.create_database(name, template=TEMPLATE), pool_size=4)
    yield database
    database.close()
    pg.drop_database(name)


@dataclass(frozen=True)
class People:
    """Two ordinary accounts and one administrator, with their tokens."""

    alice: Caller
    bob: Caller
    admin: Caller
    tokens: dict[str, str]

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}


@pytest.fixture
def people(db: Database) -> People:
    tokens: dict[str, str] = {}
    callers: dict[str, Caller] = {}
    for name, is_admin in (("alice", False), ("bob", False), ("admin", True)):
        account = add_account(db, name, is_admin=is_admin)
        tokens[name] = account.token
        callers[name] = Caller(account.id, name, is_admin)
    return People(callers["alice"], callers["bob"], callers["admin"], tokens)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class ServerProcess:
    """A running ``convodex server serve``: its base URL and the file holding
    everything it wrote to stdout and stderr."""

    url: str
    log: Path
    process: subprocess.Popen[bytes]

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def cli_command(*args: str, block_imports: tuple[str, ...] = ()) -> list[str]:
    """The argv that runs the real ``convodex`` CLI in a fresh interpreter; modules in
    ``block_imports`` fail to import there, as on an install without them."""
    code = "import sys\n"
    code += "".join(f"sys.modules[{name!r}] = None\n" for name in block_imports)
    code += "from convodex.cli.main import main\nmain(sys.argv[1:], prog_name='convodex')\n"
    return [sys.executable, "-c", code, *args]


@contextmanager
def server_process(
    db_url: str, log: Path, *, block_imports: tuple[str, ...] = (), timeout: float = 30.0
) -> Iterator[ServerProcess]:
    """Start ``convodex server serve`` (the real CLI, uvicorn on a free loopback port)
    as a subprocess; stop it with SIGINT, as a person would with Ctrl-C."""
    port = free_port()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            cli_command(
                "server", "serve", "--db", db_url, "--port", str(port), block_imports=block_imports
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                httpx.get(url + "/brain/search", timeout=5)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "convodex server serve did not start:\n" + log.read_text("utf-8")
                    ) from None
                time.sleep(0.05)
        yield ServerProcess(url, log, process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def client_of_server(
    db: Database, people: People, tmp_path: Path, name: str = "alice"
) -> Iterator[tuple[ServerProcess, httpx.Client]]:
    """A real ``convodex server serve`` over ``db`` and an HTTP client holding
    ``name``'s token."""
    with (
        server_process(db.url, tmp_path / "server.log") as served,
        httpx.Client(base_url=served.url, headers=people.auth(name), timeout=60) as http,
    ):
        yield served, http
