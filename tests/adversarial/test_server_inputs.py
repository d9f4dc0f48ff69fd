"""Issue 12, item 7: input that should be a 400 was a 500 — a deeply nested JSON body,
``parentSeq`` or an entry seq beyond 64 bits on SQLite, a session id with NUL on
PostgreSQL. Bodies get a size limit (413) and a nesting limit (400); nothing bad
input touches is lost (SPEC S5, X5). Through a real ``convodex server serve``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from convodex.server import Database
from server_fixtures import People, client_of_server, db, people, pg_cluster

__all__ = ["db", "people", "pg_cluster"]

HUGE = 2**64  # beyond any 64-bit column
BODY_LIMIT = 16 * 1024 * 1024


@pytest.fixture
def http(db: Database, people: People, tmp_path: Path) -> Iterator[httpx.Client]:
    with client_of_server(db, people, tmp_path) as (_, client):
        yield client


def _status(response: httpx.Response) -> int:
    body = response.json()
    assert body == {"ok": False, "error": body["error"], "status": response.status_code}
    return response.status_code


def _session(http: httpx.Client) -> str:
    created = http.post("/brain/sessions", json={"title": "inputs"})
    assert created.status_code == 201
    sid = str(created.json()["id"])
    entry = {"payload": {"role": "user", "content": "keepsake message"}}
    assert http.post(f"/brain/sessions/{sid}/entries", json=entry).status_code == 201
    return sid


def _still_there(http: httpx.Client) -> None:
    hits = http.get("/brain/search", params={"q": "keepsake"}).json()["hits"]
    assert [h["snippet"] for h in hits] == ["keepsake message"]


def test_numbers_beyond_64_bits_are_400(http: httpx.Client) -> None:
    sid = _session(http)
    entries = f"/brain/sessions/{sid}/entries"
    payload = {"role": "user", "content": "x"}
    assert _status(http.post(entries, json={"payload": payload, "parentSeq": HUGE})) == 400
    assert _status(http.post(entries, json={"payload": payload, "parentSeq": 0})) == 400
    assert _status(http.put(f"{entries}/{HUGE}", json={"payload": payload})) == 400
    assert _status(http.delete(f"{entries}/{10**30}")) == 400
    assert _status(http.post(f"{entries}/{HUGE}/discard")) == 400
    _still_there(http)


def test_ids_and_text_with_nul_are_400(http: httpx.Client) -> None:
    sid = _session(http)
    payload = {"role": "user", "content": "x"}
    assert _status(http.post("/brain/sessions/bad%00id/entries", json={"payload": payload})) == 400
    assert _status(http.post("/brain/sessions", json={"id": "a\x00b"})) == 400
    assert _status(http.post("/brain/sessions", json={"title": "nul\x00title"})) == 400
    assert _status(http.post("/brain/sessions", json={"id": "x" * 10_000})) == 400
    assert _status(http.post(f"/brain/sessions/{sid}/rekey", json={"id": "new\x00id"})) == 400
    assert _status(http.post(f"/brain/sessions/{sid}/fork", json={"id": "f\x00"})) == 400
    rolled = {"payload": {"role": "us\x00er", "content": "x"}}
    assert _status(http.post(f"/brain/sessions/{sid}/entries", json=rolled)) == 400
    _still_there(http)


def test_deeply_nested_bodies_are_400(http: httpx.Client) -> None:
    sid = _session(http)
    entries = f"/brain/sessions/{sid}/entries"
    for depth in (100, 100_000):
        nested = b'{"payload": {"role": "user", "content": ' + b"[" * depth + b"]" * depth + b"}}"
        response = http.post(entries, content=nested, headers={"content-type": "application/json"})
        assert _status(response) == 400
        assert "nest" in response.json()["error"]
    shallow = {"payload": {"role": "user", "content": [{"type": "text", "text": "fine"}]}}
    assert http.post(entries, json=shallow).status_code == 201
    _still_there(http)


def test_oversized_bodies_are_413(http: httpx.Client) -> None:
    sid = _session(http)
    entries = f"/brain/sessions/{sid}/entries"
    big = b'{"payload": {"role": "user", "content": "' + b"a" * BODY_LIMIT + b'"}}'
    headers = {"content-type": "application/json"}
    assert _status(http.post(entries, content=big, headers=headers)) == 413

    def chunks() -> Iterator[bytes]:
        # No Content-Length: the limit must hold while the body streams in.
        for start in range(0, len(big), 1 << 20):
            yield big[start : start + (1 << 20)]

    assert _status(http.post(entries, content=chunks(), headers=headers)) == 413
    _still_there(http)
