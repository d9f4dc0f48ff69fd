"""Issue 29: concurrent writers that never fail (SPEC S5, S6).

On PostgreSQL two simultaneous appends to one session answered 500 (``duplicate key …
entries_session_id_seq_key``): the next entry number was read in the statement that
waited for the session's lock, so it came from before the other writer committed.
Here 20 writers append to, rewrite in and fork the same 3 sessions at once through
real HTTP, on both databases: every answer is a success or a retryable 503, every
acknowledged entry is in the journal exactly once, in the order its writer wrote it.

The issue asks for 20 s of writing; CI runs on a busy 2-core machine, so the test
runs a count of operations per writer instead (``CONVODEX_HUB_WRITES``, default 12;
set it higher to soak).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from convodex.server import Database, list_entries, search_messages
from convodex.web.server_app import create_app
from server.server_helpers import serving
from server_fixtures import People

WRITERS = 20
SESSIONS = 3
WRITES = int(os.environ.get("CONVODEX_HUB_WRITES", "12"))


@dataclass
class Outcome:
    """What the writers saw: every status, and what the server acknowledged."""

    statuses: Counter[int] = field(default_factory=Counter)
    #: session id -> the markers appended there, per writer, in acknowledgement order
    appended: dict[str, dict[int, list[tuple[int, str]]]] = field(default_factory=dict)
    #: (session id, seq) -> the text it was last rewritten to (acknowledged)
    rewritten: dict[tuple[str, int], str] = field(default_factory=dict)
    #: (fork id, source id) of every acknowledged fork
    forks: list[tuple[str, str]] = field(default_factory=list)


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


async def _write(url: str, people: People, sessions: list[str]) -> Outcome:
    out = Outcome(appended={sid: {} for sid in sessions})
    limits = httpx.Limits(max_connections=WRITERS)

    async def writer(client: httpx.AsyncClient, n: int) -> None:
        mine: list[tuple[str, int]] = []
        for i in range(WRITES):
            sid = sessions[(n + i) % SESSIONS]
            if i % 6 == 5 and mine:
                target, seq = mine[i % len(mine)]
                text = f"rewritten w{n}i{i}"
                response = await client.put(
                    f"/brain/sessions/{target}/entries/{seq}", json={"payload": _user(text)}
                )
                out.statuses[response.status_code] += 1
                if response.status_code == 200:
                    out.rewritten[target, seq] = text
                continue
            if i % 6 == 3:
                response = await client.post(f"/brain/sessions/{sid}/fork", json={})
                out.statuses[response.status_code] += 1
                if response.status_code == 201:
                    out.forks.append((response.json()["id"], sid))
                continue
            marker = f"concurrent w{n}i{i}"
            response = await client.post(
                f"/brain/sessions/{sid}/entries", json={"payload": _user(marker)}
            )
            out.statuses[response.status_code] += 1
            if response.status_code == 201:
                seq = int(response.json()["seq"])
                out.appended[sid].setdefault(n, []).append((seq, marker))
                mine.append((sid, seq))

    async with httpx.AsyncClient(
        base_url=url, headers=people.auth("alice"), limits=limits, timeout=120
    ) as client:
        await asyncio.gather(*(writer(client, n) for n in range(WRITERS)))
    return out


@pytest.fixture
def served(db: Database) -> Iterator[str]:
    with serving(create_app(db)) as url:
        yield url


def test_twenty_writers_on_three_sessions_never_fail_nor_lose_an_entry(
    db: Database, people: People, served: str
) -> None:
    with httpx.Client(base_url=served, headers=people.auth("alice"), timeout=60) as http:
        sessions = [
            http.post("/brain/sessions", json={"title": f"shared {n}"}).json()["id"]
            for n in range(SESSIONS)
        ]
    out = asyncio.run(_write(served, people, sessions))
    assert set(out.statuses) <= {200, 201, 503}, out.statuses
    assert out.statuses[200] + out.statuses[201] > 0
    for sid in sessions:
        entries = list_entries(db, sid, caller=people.alice)
        seqs = [e.seq for e in entries]
        assert seqs == list(range(1, len(seqs) + 1)), "entry numbers are unique and dense"
        # One active branch: every append continued the head it found under the lock.
        assert [e.parent_seq for e in entries] == [None, *seqs[:-1]]
        by_seq = {e.seq: e for e in entries}
        texts = [e.payload for e in entries]
        for writer, acked in out.appended[sid].items():
            assert [seq for seq, _ in acked] == sorted(seq for seq, _ in acked), writer
            for seq, marker in acked:
                expected = out.rewritten.get((sid, seq), marker)
                assert expected in by_seq[seq].payload
                assert sum(marker + '"' in text for text in texts) <= 1
        for seq, marker in (pair for acked in out.appended[sid].values() for pair in acked):
            if (sid, seq) not in out.rewritten:
                hits = search_messages(db, people.alice, marker, 500)
                # Forks hold copies; in the shared sessions the marker is found once.
                found = [
                    (h.session_id, h.seq)
                    for h in hits
                    if h.session_id in sessions and h.snippet == marker
                ]
                assert found == [(sid, seq)]
    for fork_id, source in out.forks:
        copied = list_entries(db, fork_id, caller=people.alice)
        seqs = [e.seq for e in copied]
        assert seqs == list(range(1, len(seqs) + 1))
        assert len(seqs) <= len(list_entries(db, source, caller=people.alice))
