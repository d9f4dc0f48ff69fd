"""SPEC X8: without the ``server`` extra (no psycopg, no psycopg_pool) the server works
on SQLite, and a PostgreSQL URL is one clear error line naming the extra."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx

from server_fixtures import cli_command, server_process

DRIVER = ("psycopg", "psycopg_pool")


def _lean(*args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a fresh interpreter where importing the driver fails."""
    return subprocess.run(
        cli_command(*args, block_imports=DRIVER),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )


def test_sqlite_needs_no_postgresql_driver(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lean.sqlite'}"
    assert _lean("server", "init", "--db", url).returncode == 0
    added = _lean("server", "accounts", "add", "lee", "--db", url, "--json")
    assert added.returncode == 0, added.stderr
    headers = {"Authorization": f"Bearer {json.loads(added.stdout)['token']}"}
    with server_process(url, tmp_path / "server.log", block_imports=DRIVER) as served:
        response = httpx.get(served.url + "/brain/search", params={"q": "hi"}, headers=headers)
        assert response.status_code == 200 and response.json() == {"hits": []}


def test_postgresql_without_the_extra_is_one_clear_error_line() -> None:
    for args in (
        ("server", "init", "--db", "postgresql://nobody@/nowhere"),
        ("server", "serve", "--db", "postgresql://nobody@/nowhere"),
        ("server", "accounts", "add", "x", "--db", "postgres://nobody@/nowhere"),
    ):
        done = _lean(*args)
        assert (done.returncode, done.stdout) == (1, ""), done.stderr
        assert done.stderr == (
            "error: PostgreSQL support needs the server extra: pip install 'convodex[server]'\n"
        )
