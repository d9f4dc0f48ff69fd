"""`convodex server init | accounts add | serve`, driven like a user would."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from click.testing import CliRunner

from convodex.cli.server import server
from convodex.server import Database, authenticate
from convodex.server.accounts import token_hash


def _invoke(*args: str, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(server, list(args), catch_exceptions=False, env=env)
    assert result.exit_code == 0, result.output
    return result.output


def test_init_is_idempotent_and_defaults_to_the_data_dir(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "CONVODEX_SERVER_DB": ""}
    first = json.loads(_invoke("init", "--json", env=env))
    assert first == {"applied": [1], "versions": [1]}
    assert (tmp_path / "data" / "convodex" / "server" / "server.sqlite").is_file()
    assert json.loads(_invoke("init", "--json", env=env)) == {"applied": [], "versions": [1]}
    assert "up to date at migration 0001" in _invoke("init", env=env)


def test_accounts_add_prints_the_token_once_and_stores_its_hash(db: Database) -> None:
    out = json.loads(_invoke("accounts", "add", "carol", "--admin", "--db", db.url, "--json"))
    assert set(out) == {"id", "name", "token"} and out["name"] == "carol"
    caller = authenticate(db, out["token"])
    assert (caller.id, caller.is_admin) == (out["id"], True)
    with db.snapshot() as tx:
        stored = tx.all("SELECT token_hash FROM accounts")
    assert stored == [(token_hash(out["token"]),)]
    text = _invoke("accounts", "add", "dave", "--db", db.url)
    assert "created account dave" in text and "cdx_" in text
    result = CliRunner().invoke(server, ["accounts", "add", "dave", "--db", db.url])
    assert result.exit_code == 1 and "already exists" in result.output


def test_bad_database_urls_are_clear_errors() -> None:
    result = CliRunner().invoke(server, ["init", "--db", "mysql://x"])
    assert result.exit_code == 1
    assert "sqlite:///" in result.output and "Traceback" not in result.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_answers_over_http(db: Database) -> None:
    out = json.loads(_invoke("accounts", "add", "erin", "--db", db.url, "--json"))
    port = _free_port()
    code = "from convodex.cli.server import server; server()"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--db", db.url, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {out['token']}"}
        deadline = time.monotonic() + 20
        with httpx.Client(base_url=base, headers=headers) as http:
            while True:
                try:
                    http.get("/brain/search", params={"q": "zz"})
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline and process.poll() is None
                    time.sleep(0.05)
            sid = http.post("/brain/sessions", json={"title": "served"}).json()["id"]
            payload = {"role": "user", "content": "served over loopback"}
            http.post(f"/brain/sessions/{sid}/entries", json={"payload": payload})
            hits = http.get("/brain/search", params={"q": "loopback"}).json()["hits"]
            assert [(h["sessionTitle"], h["snippet"]) for h in hits] == [
                ("served", "served over loopback")
            ]
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
