"""`convodex server init | accounts add | serve`, driven like a user would."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from click.testing import CliRunner, Result

from convodex.cli.main import main
from convodex.server import Database, authenticate
from convodex.server.accounts import token_hash
from convodex.server.db import available_migrations
from server_fixtures import server_process

MIGRATIONS = sorted(available_migrations("sqlite"))


def _run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["server", *args], catch_exceptions=False, env=env)


def _invoke(*args: str, env: dict[str, str] | None = None) -> str:
    result = _run(*args, env=env)
    assert result.exit_code == 0, result.output
    return result.output


def test_init_is_idempotent_and_defaults_to_convodex_home(tmp_path: Path) -> None:
    env = {"CONVODEX_HOME": str(tmp_path / "home"), "CONVODEX_SERVER_DB": ""}
    first = json.loads(_invoke("init", "--json", env=env))
    assert first == {"applied": MIGRATIONS, "versions": MIGRATIONS}
    assert (tmp_path / "home" / "server" / "server.sqlite").is_file()
    assert json.loads(_invoke("init", "--json", env=env)) == {
        "applied": [],
        "versions": MIGRATIONS,
    }
    assert f"up to date at migration {max(MIGRATIONS):04d}" in _invoke("init", env=env)


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
    result = _run("accounts", "add", "dave", "--db", db.url)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "error: an account with this name already exists\n"


def test_errors_are_one_line_and_usage_errors_exit_2() -> None:
    result = _run("init", "--db", "mysql://x")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "sqlite:///" in result.stderr
    usage = _run("serve", "--port", "many")
    assert usage.exit_code == 2 and "Traceback" not in usage.output


def test_serve_answers_over_http(db: Database, tmp_path: Path) -> None:
    out = json.loads(_invoke("accounts", "add", "erin", "--db", db.url, "--json"))
    with server_process(db.url, tmp_path / "server.log") as served:
        headers = {"Authorization": f"Bearer {out['token']}"}
        with httpx.Client(base_url=served.url, headers=headers) as http:
            sid = http.post("/brain/sessions", json={"title": "served"}).json()["id"]
            payload = {"role": "user", "content": "served over loopback"}
            http.post(f"/brain/sessions/{sid}/entries", json={"payload": payload})
            hits = http.get("/brain/search", params={"q": "loopback"}).json()["hits"]
            assert [(h["sessionTitle"], h["snippet"]) for h in hits] == [
                ("served", "served over loopback")
            ]
