"""S4: /brain/search and the journal write API over a real ASGI stack."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from convodex.server import Database, append, create_session
from convodex.web.server_app import create_app
from server.server_helpers import serving, user
from server_fixtures import People


@pytest.fixture
def client(db: Database) -> Iterator[httpx.Client]:
    with serving(create_app(db)) as base_url, httpx.Client(base_url=base_url) as http:
        yield http


def _auth(people: People, name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {people.tokens[name]}"}


def _assert_error(response: httpx.Response, status: int) -> None:
    assert response.status_code == status
    assert response.json() == {"ok": False, "error": response.json()["error"], "status": status}
    assert isinstance(response.json()["error"], str) and response.json()["error"]


def _search(client: httpx.Client, people: People, name: str, **params: str) -> httpx.Response:
    return client.get("/brain/search", params=params, headers=_auth(people, name))


def test_search_requires_a_valid_bearer_token(client: httpx.Client, people: People) -> None:
    _assert_error(client.get("/brain/search", params={"q": "hello"}), 401)
    bad = {"Authorization": "Bearer cdx_not-a-token"}
    _assert_error(client.get("/brain/search", params={"q": "hello"}, headers=bad), 401)
    basic = {"Authorization": "Basic abc"}
    response = client.get("/brain/search", params={"q": "hello"}, headers=basic)
    _assert_error(response, 401)
    assert response.headers["www-authenticate"] == "Bearer"


def test_instance_scope_is_for_administrators(
    client: httpx.Client, db: Database, people: People
) -> None:
    sid = create_session(db, people.bob.id, kind="channel", title="ops")
    append(db, sid, user("channel secret plan"))
    _assert_error(_search(client, people, "alice", q="secret plan", scope="instance"), 403)
    assert _search(client, people, "alice", q="secret plan").json() == {"hits": []}
    hits = _search(client, people, "admin", q="secret plan", scope="instance").json()["hits"]
    assert [(h["sessionId"], h["sessionTitle"], h["ownerId"]) for h in hits] == [
        (sid, "ops", people.bob.id)
    ]
    assert set(hits[0]) == {"sessionId", "sessionTitle", "seq", "role", "snippet", "ts", "ownerId"}
    _assert_error(_search(client, people, "admin", q="plan", scope="galaxy"), 400)


def test_search_limits(client: httpx.Client, db: Database, people: People) -> None:
    sid = create_session(db, people.alice.id)
    for i in range(205):
        append(db, sid, user(f"limitword {i}"))
    assert len(_search(client, people, "alice", q="limitword").json()["hits"]) == 50
    assert len(_search(client, people, "alice", q="limitword", limit="7").json()["hits"]) == 7
    assert len(_search(client, people, "alice", q="limitword", limit="999").json()["hits"]) == 200
    assert _search(client, people, "alice", q="limitword", limit="0").json() == {"hits": []}
    assert _search(client, people, "alice", q="limitword", limit="-3").json() == {"hits": []}
    assert _search(client, people, "alice", q="l").json() == {"hits": []}
    response = _search(client, people, "alice", q="limitword", limit="many")
    _assert_error(response, 400)
    assert "limitword" not in response.text


def test_write_api_round_trip(client: httpx.Client, people: People) -> None:
    alice = _auth(people, "alice")

    def found(query: str) -> list[tuple[str, int]]:
        hits = _search(client, people, "alice", q=query).json()["hits"]
        return [(h["sessionId"], h["seq"]) for h in hits]

    created = client.post(
        "/brain/sessions", json={"title": "trip", "kind": "personal"}, headers=alice
    )
    assert created.status_code == 201
    sid = created.json()["id"]
    url = f"/brain/sessions/{sid}/entries"
    first = client.post(url, json={"payload": user("voyage begins")}, headers=alice)
    assert (first.status_code, first.json()) == (201, {"seq": 1})
    second = client.post(url, json={"payload": user("voyage detour")}, headers=alice)
    assert second.json() == {"seq": 2}
    branch = client.post(
        url, json={"payload": user("voyage other way"), "parentSeq": 1}, headers=alice
    )
    assert branch.json() == {"seq": 3}
    assert found("voyage") == [(sid, 3), (sid, 1)]
    meta = client.post(url, json={"payload": user("voyage meta"), "meta": True}, headers=alice)
    assert meta.status_code == 201 and found("voyage meta") == []

    put = client.put(f"{url}/3", json={"payload": user("voyage renamed")}, headers=alice)
    assert put.json() == {"ok": True}
    assert found("voyage renamed") == [(sid, 3)]
    assert client.post(f"{url}/3/discard", headers=alice).json() == {"ok": True}
    assert found("renamed") == []
    assert client.post(f"{url}/3/restore", headers=alice).json() == {"ok": True}
    assert found("renamed") == [(sid, 3)]
    assert client.delete(f"{url}/1", headers=alice).json() == {"ok": True}
    assert found("begins") == []

    forked = client.post(f"/brain/sessions/{sid}/fork", headers=alice)
    assert forked.status_code == 201
    fork_id = forked.json()["id"]
    assert {s for s, _ in found("renamed")} == {sid, fork_id}

    rekeyed = client.post(
        f"/brain/sessions/{fork_id}/rekey", json={"id": "fork-2", "kind": "channel"}, headers=alice
    )
    assert rekeyed.json() == {"id": "fork-2", "ownerId": people.alice.id, "kind": "channel"}
    assert found("renamed") == [(sid, 3)]
    assert client.post(f"/brain/sessions/{sid}/clear", headers=alice).json() == {"ok": True}
    assert found("renamed") == []


def test_writes_only_touch_owned_sessions(client: httpx.Client, people: People) -> None:
    alice, bob, admin = (_auth(people, n) for n in ("alice", "bob", "admin"))
    sid = client.post("/brain/sessions", json={"title": "mine"}, headers=alice).json()["id"]
    url = f"/brain/sessions/{sid}/entries"
    client.post(url, json={"payload": user("private words")}, headers=alice)
    for method, path, body in [
        ("POST", url, {"payload": user("intrusion")}),
        ("PUT", f"{url}/1", {"payload": user("intrusion")}),
        ("POST", f"{url}/1/discard", None),
        ("POST", f"{url}/1/restore", None),
        ("DELETE", f"{url}/1", None),
        ("POST", f"/brain/sessions/{sid}/fork", None),
        ("POST", f"/brain/sessions/{sid}/rekey", {"ownerId": people.bob.id}),
        ("POST", f"/brain/sessions/{sid}/clear", None),
    ]:
        _assert_error(client.request(method, path, json=body, headers=bob), 403)
        _assert_error(client.request(method, path, json=body), 401)
    _assert_error(
        client.post("/brain/sessions", json={"ownerId": people.alice.id}, headers=bob), 403
    )
    assert _search(client, people, "alice", q="private words").json()["hits"][0]["seq"] == 1
    assert client.post(url, json={"payload": user("admin note")}, headers=admin).status_code == 201
    given = client.post(
        "/brain/sessions", json={"title": "gift", "ownerId": people.bob.id}, headers=admin
    )
    assert given.status_code == 201


def test_every_error_has_one_shape(client: httpx.Client, people: People) -> None:
    alice = _auth(people, "alice")
    _assert_error(client.get("/nowhere"), 404)
    _assert_error(client.delete("/brain/search"), 405)
    _assert_error(
        client.post("/brain/sessions/missing/entries", json={"payload": user("x")}, headers=alice),
        404,
    )
    _assert_error(client.post("/brain/sessions", content=b"{not json", headers=alice), 400)
    _assert_error(client.post("/brain/sessions", json=[1, 2], headers=alice), 400)
    _assert_error(client.post("/brain/sessions", json={"kind": "group"}, headers=alice), 400)
    sid = client.post("/brain/sessions", json={"id": "taken"}, headers=alice).json()["id"]
    _assert_error(client.post("/brain/sessions", json={"id": sid}, headers=alice), 409)
    url = f"/brain/sessions/{sid}/entries"
    _assert_error(client.post(url, json={"payload": "text"}, headers=alice), 400)
    _assert_error(client.post(url, json={"payload": {"content": "no role"}}, headers=alice), 400)
    _assert_error(
        client.post(url, json={"payload": user("x"), "parentSeq": "1"}, headers=alice), 400
    )
    _assert_error(client.post(url, json={"payload": user("x"), "parentSeq": 9}, headers=alice), 404)
    _assert_error(client.put(f"{url}/9", json={"payload": user("x")}, headers=alice), 404)
