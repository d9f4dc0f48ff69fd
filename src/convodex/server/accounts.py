"""Accounts and bearer tokens. Only a token's hash is stored; it is shown once.

A lost token is rotated (a new one replaces it), a departing person's account is
revoked (its token is refused from then on; its sessions stay, as the journal's).
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass

from convodex.errors import Conflict, NotFound, Unauthorized
from convodex.server.db import Database, Tx, now_micros
from convodex.server.inputs import check_id

TOKEN_PREFIX = "cdx_"


@dataclass(frozen=True)
class Caller:
    """Who is asking: an account id and whether it administers the instance."""

    id: str
    name: str
    is_admin: bool = False


@dataclass(frozen=True)
class NewAccount:
    """A freshly created account with the only copy of its token."""

    id: str
    name: str
    is_admin: bool
    token: str


@dataclass(frozen=True)
class AccountInfo:
    """An account as ``accounts list`` shows it (never its token)."""

    id: str
    name: str
    is_admin: bool
    created_at: int
    revoked_at: int | None
    teams: tuple[str, ...]


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def add_account(db: Database, name: str, *, is_admin: bool = False) -> NewAccount:
    """Create an account and return it with a new bearer token."""
    check_id(name, "account name")
    account_id = "acc_" + uuid.uuid4().hex
    token = new_token()
    with db.write() as tx:
        if tx.one("SELECT 1 FROM accounts WHERE name = ?", (name,)) is not None:
            raise Conflict("an account with this name already exists")
        tx.run(
            "INSERT INTO accounts (id, name, is_admin, token_hash, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (account_id, name, is_admin, token_hash(token), tx.ts(now_micros())),
        )
    return NewAccount(account_id, name, is_admin, token)


def authenticate(db: Database, token: str | None) -> Caller:
    """The caller a bearer token belongs to; :class:`Unauthorized` otherwise."""
    if not token:
        raise Unauthorized("a bearer token is required")
    with db.snapshot() as tx:
        row = tx.one(
            "SELECT id, name, is_admin FROM accounts WHERE token_hash = ? AND revoked_at IS NULL",
            (token_hash(token),),
        )
    if row is None:
        raise Unauthorized("the bearer token is not valid")
    return Caller(str(row[0]), str(row[1]), bool(row[2]))


def get_caller(db: Database, account_id: str) -> Caller:
    """The caller for a known account id (for the Python API and tests)."""
    check_id(account_id, "account id")
    with db.snapshot() as tx:
        row = tx.one(
            "SELECT id, name, is_admin FROM accounts WHERE id = ? AND revoked_at IS NULL",
            (account_id,),
        )
    if row is None:
        raise Unauthorized("unknown account")
    return Caller(str(row[0]), str(row[1]), bool(row[2]))


def _account_id(tx: Tx, name_or_id: str) -> str:
    """The id of the account named (or with the id) ``name_or_id``."""
    check_id(name_or_id, "account")
    row = tx.one("SELECT id FROM accounts WHERE name = ? OR id = ?", (name_or_id, name_or_id))
    if row is None:
        raise NotFound("account not found")
    return str(row[0])


def list_accounts(db: Database) -> list[AccountInfo]:
    """Every account, by name, with the teams it belongs to."""
    with db.snapshot() as tx:
        rows = tx.all(
            "SELECT id, name, is_admin, created_at, revoked_at FROM accounts ORDER BY name"
        )
        members = tx.all(
            "SELECT m.account_id, t.name FROM team_members m JOIN teams t ON t.id = m.team_id"
            " ORDER BY t.name"
        )
        teams: dict[str, list[str]] = {}
        for account_id, team in members:
            teams.setdefault(str(account_id), []).append(str(team))
        return [
            AccountInfo(
                id=str(r[0]),
                name=str(r[1]),
                is_admin=bool(r[2]),
                created_at=tx.dialect.ts_value(r[3]),
                revoked_at=None if r[4] is None else tx.dialect.ts_value(r[4]),
                teams=tuple(teams.get(str(r[0]), ())),
            )
            for r in rows
        ]


def revoke_account(db: Database, name_or_id: str) -> str:
    """Refuse the account's token from now on; return its id. Its sessions stay."""
    with db.write() as tx:
        account_id = _account_id(tx, name_or_id)
        tx.run(
            "UPDATE accounts SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            (tx.ts(now_micros()), account_id),
        )
    return account_id


def rotate_token(db: Database, name_or_id: str) -> NewAccount:
    """Replace the account's token with a new one (the old one is refused at once);
    a revoked account is active again with the new token."""
    token = new_token()
    with db.write() as tx:
        account_id = _account_id(tx, name_or_id)
        tx.run(
            "UPDATE accounts SET token_hash = ?, revoked_at = NULL WHERE id = ?",
            (token_hash(token), account_id),
        )
        row = tx.one("SELECT name, is_admin FROM accounts WHERE id = ?", (account_id,))
    assert row is not None
    return NewAccount(account_id, str(row[0]), bool(row[1]), token)
