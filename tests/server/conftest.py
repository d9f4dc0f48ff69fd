"""Fixtures: every server test runs against a SQLite file and a real PostgreSQL."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_helpers import People

from convodex.server import Caller, Database, add_account, open_database
from convodex.server import search as search_module
from pg import TempPostgres

TEMPLATE = "convodex_template"
_names = itertools.count()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[TempPostgres]:
    """One PostgreSQL cluster per test session, with a migrated template database."""
    with TempPostgres() as pg:
        with open_database(pg.create_database(TEMPLATE)) as db:
            db.migrate()
        yield pg


def _sqlite(tmp_path: Path) -> Database:
    db = open_database(f"sqlite:///{tmp_path / 'server.sqlite'}")
    db.migrate()
    return db


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A migrated, empty server database on each backend."""
    if request.param == "sqlite":
        database = _sqlite(tmp_path)
        yield database
        database.close()
        return
    pg: TempPostgres = request.getfixturevalue("pg_cluster")
    name = f"test_{next(_names)}"
    database = open_database(pg.create_database(name, template=TEMPLATE), pool_size=4)
    yield database
    database.close()
    pg.drop_database(name)


@pytest.fixture
def people(db: Database) -> People:
    tokens: dict[str, str] = {}
    callers: dict[str, Caller] = {}
    for name, is_admin in (("alice", False), ("bob", False), ("admin", True)):
        account = add_account(db, name, is_admin=is_admin)
        tokens[name] = account.token
        callers[name] = Caller(account.id, name, is_admin)
    return People(callers["alice"], callers["bob"], callers["admin"], tokens)


@pytest.fixture(params=["scan-first", "index-first"])
def tuning(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run every case both with the default plan (small data: scan) and with a tiny
    probe window and no small-scope scan, so the trigram index serves older rows."""
    if request.param == "index-first":
        monkeypatch.setattr(search_module, "PROBE_WINDOW", 2)
        monkeypatch.setattr(search_module, "SMALL_SCOPE", 0)
    return str(request.param)
