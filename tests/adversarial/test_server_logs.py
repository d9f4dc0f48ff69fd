"""Issue 12, item 5: `convodex server serve` logged every query (uvicorn's access log
printed ``GET /brain/search?q=…``). No log line may carry a query string, a token,
a body or an id a caller chose (SPEC S5), on either database."""

from __future__ import annotations

from pathlib import Path

import httpx

from convodex.server import Database
from server_fixtures import People, db, people, pg_cluster, server_process

__all__ = ["db", "people", "pg_cluster"]

SECRET = "zebrasecret"


def test_no_log_line_carries_a_query_token_body_or_chosen_id(
    db: Database, people: People, tmp_path: Path
) -> None:
    token = people.tokens["alice"]
    with server_process(db.url, tmp_path / "server.log") as served:
        with httpx.Client(base_url=served.url, headers=people.auth("alice")) as http:
            created = http.post("/brain/sessions", json={"id": f"{SECRET}-id", "title": SECRET})
            assert created.status_code == 201
            entries = f"/brain/sessions/{SECRET}-id/entries"
            payload = {"role": "user", "content": f"the {SECRET} plan"}
            assert http.post(entries, json={"payload": payload}).status_code == 201
            for query in (SECRET, "ze", f"{SECRET} plan"):
                response = http.get("/brain/search", params={"q": query, "limit": "5"})
                assert response.status_code == 200 and response.json()["hits"]
            # Errors too: bad input, an unknown session, a NUL in an id, a bad token.
            assert http.get("/brain/search", params={"q": SECRET, "limit": SECRET}).is_error
            nope = http.post(f"/brain/sessions/{SECRET}-nope/entries", json={"payload": payload})
            assert nope.status_code == 404
            assert http.post(f"/brain/sessions/{SECRET}%00x/entries", json={}).is_error
            assert http.put(f"{entries}/1", content=b'{"payload": ' + SECRET.encode()).is_error
            bad = {"Authorization": f"Bearer {token}{SECRET}"}
            assert http.get("/brain/search", params={"q": SECRET}, headers=bad).is_error
    log = served.output()
    for leak in (SECRET, token, "q=", "\x00", "%00"):
        assert leak not in log, f"the server log carries {leak!r}"
    # It still logs every request: method, route template, status.
    assert '"GET /brain/search" 200' in log
    assert '"POST /brain/sessions/{session_id}/entries" 201' in log
    assert '"POST /brain/sessions/{session_id}/entries" 404' in log
