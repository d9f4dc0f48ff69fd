"""`convodex server …`: the conversation server's commands (SPEC S).

Errors are :class:`~convodex.errors.ConvodexError`; the ``convodex`` group prints
them as one ``error: …`` line on stderr and exits 1, like every other command.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from convodex.server.connect import default_url, open_database
from convodex.server.db import Database

F = TypeVar("F", bound=Callable[..., Any])


def db_option(fn: F) -> F:
    """``--db URL``: ``sqlite:///path`` (default: under the data dir) or ``postgresql://…``."""
    option = click.option(
        "--db",
        "db_url",
        envvar="CONVODEX_SERVER_DB",
        default=None,
        metavar="URL",
        help="sqlite:///path/to/file.sqlite or postgresql://…; default: a SQLite file "
        "under the platform data directory [env: CONVODEX_SERVER_DB]",
    )
    return option(fn)


def _open(db_url: str | None) -> Database:
    return open_database(db_url or default_url())


def _log_config() -> dict[str, Any]:
    """uvicorn's logging, minus its access log (it prints each request line with its
    query string), plus convodex's own access log of route templates (SPEC S5)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["convodex.server"] = {
        "handlers": ["default"],
        "level": "INFO",
        "propagate": False,
    }
    return config


@click.group(name="server")
def server() -> None:
    """Run and administer the multi-account conversation server."""


@server.command("init")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def init(db_url: str | None, as_json: bool) -> None:
    """Create or upgrade the server database (numbered migrations)."""
    with _open(db_url) as db:
        applied = db.migrate()
        versions = db.applied_migrations()
    if as_json:
        click.echo(json.dumps({"applied": applied, "versions": versions}))
    elif applied:
        click.echo("applied migrations " + ", ".join(f"{v:04d}" for v in applied))
    else:
        click.echo(f"up to date at migration {max(versions):04d}")


@server.group("accounts")
def accounts() -> None:
    """Manage the accounts that may use the server."""


@accounts.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="May search the whole instance.")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def accounts_add(name: str, admin: bool, db_url: str | None, as_json: bool) -> None:
    """Create account NAME and print its bearer token (shown only this once)."""
    from convodex.server.accounts import add_account

    with _open(db_url) as db:
        db.migrate()
        account = add_account(db, name, is_admin=admin)
    if as_json:
        click.echo(json.dumps({"id": account.id, "name": account.name, "token": account.token}))
        return
    role = "administrator" if account.is_admin else "account"
    click.echo(f"created {role} {account.name} ({account.id})")
    click.echo(f"token (shown once, only its hash is stored): {account.token}")


@accounts.command("list")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def accounts_list(db_url: str | None, as_json: bool) -> None:
    """List the accounts (never their tokens)."""
    from convodex.server.accounts import list_accounts

    with _open(db_url) as db:
        db.migrate()
        found = list_accounts(db)
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "id": a.id,
                        "name": a.name,
                        "admin": a.is_admin,
                        "revoked": a.revoked_at is not None,
                        "teams": list(a.teams),
                    }
                    for a in found
                ]
            )
        )
        return
    for a in found:
        flags = ("admin " if a.is_admin else "") + ("revoked " if a.revoked_at else "")
        teams = ", ".join(a.teams) or "-"
        click.echo(f"{a.name}\t{a.id}\t{flags.strip() or 'account'}\tteams: {teams}")


@accounts.command("revoke")
@click.argument("account")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def accounts_revoke(account: str, db_url: str | None, as_json: bool) -> None:
    """Refuse ACCOUNT's token from now on (its sessions stay)."""
    from convodex.server.accounts import revoke_account

    with _open(db_url) as db:
        db.migrate()
        account_id = revoke_account(db, account)
    if as_json:
        click.echo(json.dumps({"id": account_id, "revoked": True}))
    else:
        click.echo(f"revoked {account} ({account_id}): its token is refused from now on")


@accounts.command("rotate")
@click.argument("account")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def accounts_rotate(account: str, db_url: str | None, as_json: bool) -> None:
    """Give ACCOUNT a new token (shown once); the old one is refused at once."""
    from convodex.server.accounts import rotate_token

    with _open(db_url) as db:
        db.migrate()
        rotated = rotate_token(db, account)
    if as_json:
        click.echo(json.dumps({"id": rotated.id, "name": rotated.name, "token": rotated.token}))
        return
    click.echo(f"rotated the token of {rotated.name} ({rotated.id})")
    click.echo(f"token (shown once, only its hash is stored): {rotated.token}")


@server.group("teams")
def teams() -> None:
    """Manage teams: their members search the sessions shared with them."""


def _team_json(team: Any) -> str:
    return json.dumps({"id": team.id, "name": team.name, "members": list(team.members)})


def _team_command(name: str, doc: str, action: str) -> None:
    @teams.command(name, help=doc)
    @click.argument("team")
    @click.argument("account")
    @db_option
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def command(team: str, account: str, db_url: str | None, as_json: bool) -> None:
        from convodex.server import teams as library

        change = library.add_member if action == "add" else library.remove_member
        with _open(db_url) as db:
            db.migrate()
            info = change(db, team, account)
        if as_json:
            click.echo(_team_json(info))
        else:
            click.echo(f"{info.name}: {', '.join(info.members) or 'no members'}")


_team_command("add", "Add ACCOUNT (name or id) to TEAM.", "add")
_team_command("remove", "Remove ACCOUNT (name or id) from TEAM.", "remove")


@teams.command("create")
@click.argument("team")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def teams_create(team: str, db_url: str | None, as_json: bool) -> None:
    """Create TEAM (empty; add members with `teams add`)."""
    from convodex.server.teams import create_team

    with _open(db_url) as db:
        db.migrate()
        info = create_team(db, team)
    click.echo(_team_json(info) if as_json else f"created team {info.name} ({info.id})")


@teams.command("list")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def teams_list(db_url: str | None, as_json: bool) -> None:
    """List the teams and their members."""
    from convodex.server.teams import list_teams

    with _open(db_url) as db:
        db.migrate()
        found = list_teams(db)
    if as_json:
        click.echo("[" + ", ".join(_team_json(t) for t in found) + "]")
        return
    for t in found:
        click.echo(f"{t.name}: {', '.join(t.members) or 'no members'}")


def _backfill(db: Database) -> None:
    """Ranked tokens for older entries; stopped by the server closing under it (the
    next start resumes where it stopped)."""
    from convodex.server.projection import backfill_tokens

    with contextlib.suppress(Exception):
        backfill_tokens(db)


@server.command("serve")
@db_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8765, show_default=True, type=int, help="Port to bind.")
@click.option(
    "--replica-db",
    "replica_url",
    envvar="CONVODEX_SERVER_REPLICA_DB",
    default=None,
    metavar="URL",
    help="A streaming read replica (postgresql://…) that serves searches and session "
    "reads; a caller always sees its own writes [env: CONVODEX_SERVER_REPLICA_DB]",
)
def serve(db_url: str | None, host: str, port: int, replica_url: str | None) -> None:
    """Serve /brain/search and the journal write API over HTTP."""
    import threading

    import uvicorn

    from convodex.web.server_app import create_app

    with _open(db_url) as db, contextlib.ExitStack() as stack:
        db.migrate()
        # Entries from before ranked search get their tokens while the server answers.
        threading.Thread(
            target=_backfill, args=(db,), name="convodex-backfill", daemon=True
        ).start()
        replica = stack.enter_context(open_database(replica_url)) if replica_url else None
        uvicorn.run(
            create_app(db, replica),
            host=host,
            port=port,
            log_config=_log_config(),
            access_log=False,
            ws="none",
        )
