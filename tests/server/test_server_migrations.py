"""Numbered migrations: a database written under 0001 (a separate search_rows table)
keeps every search row when 0002 moves the projection into the entries."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from convodex.server import (
    Caller,
    Database,
    add_account,
    append,
    create_session,
    open_database,
    search_messages,
)
from convodex.server.db import available_migrations
from pg import TempPostgres
from server.server_helpers import user

_names = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """An empty database with no migration applied."""
    if request.param == "sqlite":
        with open_database(f"sqlite:///{tmp_path / 'old.sqlite'}") as database:
            yield database
        return
    pg: TempPostgres = request.getfixturevalue("pg_cluster")
    name = f"migrate_{next(_names)}"
    with open_database(pg.create_database(name), pool_size=2) as database:
        yield database
    pg.drop_database(name)


def test_0002_keeps_the_rows_written_under_0001(fresh: Database) -> None:
    name, script = available_migrations(fresh.dialect.name)[1]
    fresh.applied_migrations()  # creates schema_migrations
    fresh._apply_migration(1, name, script)
    with fresh.write() as tx:
        tx.run(
            "INSERT INTO accounts (id, name, is_admin, token_hash, created_at)"
            " VALUES ('acc', 'old', FALSE, 'h', ?)",
            (tx.ts(1),),
        )
        tx.run(
            "INSERT INTO sessions (id, owner_id, kind, title, created_at, head_seq)"
            " VALUES ('s1', 'acc', 'personal', 'old times', ?, 2)",
            (tx.ts(1),),
        )
        for seq, payload, text in (
            (1, '{"role":"user","content":"written before 0002"}', "written before 0002"),
            (2, '{"role":"toolResult","content":"no row"}', None),
        ):
            row = tx.one(
                "INSERT INTO entries (session_id, seq, created_at, parent_seq, role, payload,"
                " payload_hash, on_branch, projected) VALUES ('s1', ?, ?, ?, 'user', ?, 'h',"
                " TRUE, TRUE) RETURNING row_id",
                (seq, tx.ts(seq), seq - 1 or None, payload),
            )
            assert row is not None
            if text is not None:
                tx.run(
                    "INSERT INTO search_rows (row_id, session_id, seq, created_at, text)"
                    " VALUES (?, 's1', ?, ?, ?)",
                    (row[0], seq, tx.ts(seq), text),
                )
    assert fresh.migrate() == sorted(available_migrations(fresh.dialect.name))[1:]
    owner = Caller("acc", "old", False)
    assert [h.snippet for h in search_messages(fresh, owner, "before 0002")] == [
        "written before 0002"
    ]
    assert [h.snippet for h in search_messages(fresh, owner, "02")] == ["written before 0002"]
    with fresh.snapshot() as tx:
        assert tx.all("SELECT seq, text FROM search_rows") == [(1, "written before 0002")]
    # And the journal goes on as before.
    account = add_account(fresh, "new")
    sid = create_session(fresh, account.id)
    append(fresh, sid, user("written after 0002"))
    found = search_messages(fresh, Caller(account.id, "new", False), "written after")
    assert [h.snippet for h in found] == ["written after 0002"]


def test_postgresql_stores_long_payloads_and_texts_with_lz4(pg_cluster: TempPostgres) -> None:
    """A long entry's payload and projected text are compressed with lz4 (migration
    0006), in every partition, not with pglz, PostgreSQL's default."""
    name = f"migrate_{next(_names)}"
    with open_database(pg_cluster.create_database(name), pool_size=2) as db:
        db.migrate()
        account = add_account(db, "long")
        sid = create_session(db, account.id)
        append(db, sid, user("a long message " * 400))
        with db.snapshot() as tx:
            compressed = tx.all(
                "SELECT pg_column_compression(payload), pg_column_compression(text) FROM entries"
            )
            unset = tx.all(
                "SELECT a.attrelid::regclass::text FROM pg_attribute a JOIN pg_inherits i"
                " ON i.inhrelid = a.attrelid WHERE i.inhparent = 'entries'::regclass"
                " AND a.attname IN ('payload', 'text') AND a.attcompression <> 'l'"
            )
    pg_cluster.drop_database(name)
    assert compressed == [("lz4", "lz4")]
    assert unset == []
