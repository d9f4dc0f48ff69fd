"""Accounts and bearer tokens. Only a token's hash is stored; it is shown once."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass

from convodex.errors import Conflict, Unauthorized
from convodex.server.db import Database, now_micros
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


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def add_account(db: Database, name: str, *, is_admin: bool = False) -> NewAccount:
    """Create an account and return it with a new bearer token."""
    check_id(name, "account name")
    account_id = "acc_" + uuid.uuid4().hex
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
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
            "SELECT id, name, is_admin FROM accounts WHERE token_hash = ?", (token_hash(token),)
        )
    if row is None:
        raise Unauthorized("the bearer token is not valid")
    return Caller(str(row[0]), str(row[1]), bool(row[2]))


def get_caller(db: Database, account_id: str) -> Caller:
    """The caller for a known account id (for the Python API and tests)."""
    check_id(account_id, "account id")
    with db.snapshot() as tx:
        row = tx.one("SELECT id, name, is_admin FROM accounts WHERE id = ?", (account_id,))
    if row is None:
        raise Unauthorized("unknown account")
    return Caller(str(row[0]), str(row[1]), bool(row[2]))
