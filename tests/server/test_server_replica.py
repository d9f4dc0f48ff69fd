"""Issue 29: searches served by a streaming replica, with read-your-own-writes (SPEC S6).

The test suite starts a real primary and a real hot-standby replica (pg_basebackup,
streaming WAL). With the replica's replay paused, a caller who just wrote is sent to
the primary and finds the write; a caller who wrote nothing reads the replica, which
does not have it yet. Once the replica replays it, everyone sees it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from convodex.server import Database, add_account, open_database
from convodex.web.server_app import create_app
from pg import TempPostgres, TempReplica
from server.server_helpers import serving


@pytest.fixture(scope="module")
def clusters() -> Iterator[tuple[TempPostgres, TempReplica]]:
    primary = TempPostgres().start()
    try:
        primary.create_database("hub")
        replica = primary.start_replica()
        try:
            yield primary, replica
        finally:
            replica.stop()
    finally:
        primary.stop()


def _until(condition: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not callable(condition) or not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_searches_go_to_the_replica_and_a_writer_sees_its_own_writes(
    clusters: tuple[TempPostgres, TempReplica],
) -> None:
    primary, replica = clusters
    db: Database = open_database(primary.url("hub"), pool_size=4)
    copy: Database = open_database(replica.url("hub"), pool_size=4)
    try:
        db.migrate()
        alice = add_account(db, "alice")
        root = add_account(db, "root", is_admin=True)

        def replicated(token: str) -> bool:
            try:
                with copy.snapshot() as tx:
                    return tx.one("SELECT 1 FROM accounts WHERE name = 'root'") is not None
            except psycopg.errors.UndefinedTable:
                return False  # the migration itself has not been replayed there yet

        _until(lambda: replicated(root.token), "the accounts to reach the replica")
        with psycopg.connect(replica.url("hub"), autocommit=True) as control:
            control.execute("SELECT pg_wal_replay_pause()")
            with (
                serving(create_app(db, copy)) as url,
                httpx.Client(base_url=url, timeout=60) as http,
            ):
                mine = {"Authorization": f"Bearer {alice.token}"}
                admin = {"Authorization": f"Bearer {root.token}"}
                sid = http.post("/brain/sessions", json={"title": "t"}, headers=mine).json()["id"]
                payload = {"role": "user", "content": "the replicaword arrives"}
                response = http.post(
                    f"/brain/sessions/{sid}/entries", json={"payload": payload}, headers=mine
                )
                assert response.status_code == 201

                def found(headers: dict[str, str], **params: str) -> list[str]:
                    answer = http.get(
                        "/brain/search", params={"q": "replicaword", **params}, headers=headers
                    ).json()
                    return [h["snippet"] for h in answer["hits"]]

                # The writer reads its own write at once (the primary answers)...
                assert found(mine) == ["the replicaword arrives"]
                assert found(mine, mode="ranked") == ["the replicaword arrives"]
                assert http.get(f"/brain/sessions/{sid}", headers=mine).status_code == 200
                # ...while a caller who wrote nothing reads the paused replica.
                assert found(admin, scope="instance") == []
                assert http.get(f"/brain/sessions/{sid}", headers=admin).status_code == 404
                control.execute("SELECT pg_wal_replay_resume()")
                _until(lambda: found(admin, scope="instance") != [], "the replica to replay")
                assert found(admin, scope="instance") == ["the replicaword arrives"]
                assert found(mine) == ["the replicaword arrives"]
    finally:
        copy.close()
        db.close()
