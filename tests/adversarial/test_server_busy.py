"""Issue 12, item 6: the SQLite server answered 500 under concurrent writes. A busy,
locked or unreachable database is 503 with ``Retry-After``, never 500; writers queue
(one write connection) instead of failing; nothing written is lost (SPEC S5).
Through a real ``convodex server serve`` on both databases."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg

from convodex.server import Database
from convodex.sqlite import sqlite3
from server_fixtures import People, client_of_server, db, people, pg_cluster

__all__ = ["db", "people", "pg_cluster"]

WRITERS = 20
SEARCHERS = 20
ROUNDS = 10


async def _mix(url: str, people: People, sessions: list[str]) -> Counter[tuple[str, int]]:
    """Every writer appends ``ROUNDS`` entries to its own session while every searcher
    runs ``ROUNDS`` searches (short and long queries, both scopes)."""
    statuses: Counter[tuple[str, int]] = Counter()
    queries = ["mixword", "mi", "xw", "mixword 3", "ord"]
    limits = httpx.Limits(max_connections=WRITERS + SEARCHERS)

    async def writer(client: httpx.AsyncClient, n: int, sid: str) -> None:
        for i in range(ROUNDS):
            payload = {"role": "user", "content": f"mixword w{n}r{i} from writer {n}"}
            response = await client.post(
                f"/brain/sessions/{sid}/entries", json={"payload": payload}
            )
            statuses["write", response.status_code] += 1

    async def searcher(client: httpx.AsyncClient, n: int) -> None:
        for i in range(ROUNDS):
            params = {"q": queries[(n + i) % len(queries)], "limit": "20"}
            name = "alice"
            if i % 3 == 0:
                params["scope"], name = "instance", "admin"
            response = await client.get("/brain/search", params=params, headers=people.auth(name))
            statuses["search", response.status_code] += 1

    async with httpx.AsyncClient(
        base_url=url, headers=people.auth("alice"), limits=limits, timeout=120
    ) as client:
        await asyncio.gather(
            *(writer(client, n, sid) for n, sid in enumerate(sessions)),
            *(searcher(client, n) for n in range(SEARCHERS)),
        )
    return statuses


def test_concurrent_writers_and_searchers_get_no_errors_and_lose_nothing(
    db: Database, people: People, tmp_path: Path
) -> None:
    with client_of_server(db, people, tmp_path) as (served, http):
        sessions = [
            http.post("/brain/sessions", json={"title": f"writer {n}"}).json()["id"]
            for n in range(WRITERS)
        ]
        statuses = asyncio.run(_mix(served.url, people, sessions))
        assert statuses == {
            ("write", 201): WRITERS * ROUNDS,
            ("search", 200): SEARCHERS * ROUNDS,
        }
        for n in range(WRITERS):
            for i in range(ROUNDS):
                hits = http.get("/brain/search", params={"q": f"mixword w{n}r{i} "}).json()
                assert [h["snippet"] for h in hits["hits"]] == [f"mixword w{n}r{i} from writer {n}"]


@contextmanager
def _held_write_lock(db: Database, session_id: str) -> Iterator[None]:
    """Another client holds the lock an append needs, as a long transaction would."""
    if db.dialect.name == "sqlite":
        lite = sqlite3.connect(db.url.removeprefix("sqlite:///"), isolation_level=None)
        lite.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            lite.execute("ROLLBACK")
            lite.close()
        return
    with psycopg.connect(db.url) as conn:
        conn.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
        yield
        conn.rollback()


def test_a_locked_database_is_503_with_retry_after_and_reads_go_on(
    db: Database, people: People, tmp_path: Path
) -> None:
    with client_of_server(db, people, tmp_path) as (served, http):
        sid = http.post("/brain/sessions", json={"title": "locked"}).json()["id"]
        entries = f"/brain/sessions/{sid}/entries"
        first = {"payload": {"role": "user", "content": "before the lock"}}
        assert http.post(entries, json=first).status_code == 201
        with _held_write_lock(db, sid):
            # Reads never wait for a writer.
            hits = http.get("/brain/search", params={"q": "before the lock"}).json()["hits"]
            assert len(hits) == 1
            blocked = {"payload": {"role": "user", "content": "while locked"}}
            response = http.post(entries, json=blocked)
            assert response.status_code == 503, response.text
            assert response.headers["retry-after"] == "1"
            assert response.json() == {
                "ok": False,
                "error": "the database is busy",
                "status": 503,
            }
        retried = http.post(entries, json=blocked)
        assert retried.status_code == 201
        hits = http.get("/brain/search", params={"q": "lock"}).json()["hits"]
        assert [h["snippet"] for h in hits] == ["while locked", "before the lock"]
    assert "Traceback" not in served.output()
