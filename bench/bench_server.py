"""Benchmark the conversation server: search latency with and without the trigram
index, append cost with and without the projection, and a concurrent HTTP mix
(20 writers + 20 searchers against a real `convodex server serve`) on both databases.

    .venv/bin/python bench/bench_server.py                 # full size (1M PG, 200k SQLite)
    .venv/bin/python bench/bench_server.py --entries 50000 --sqlite-entries 20000
    .venv/bin/python bench/bench_server.py --only mix --mix-seconds 10

PostgreSQL is a throwaway cluster started from the installed binaries (like the
tests; fsync off). Bulk loading uses COPY, but every row's text and hash come from
the same projection functions the journal uses. Never part of pytest.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import psycopg
from psycopg import sql

from convodex.server import Caller, Database, add_account, append, create_session, open_database
from convodex.server.db import now_micros
from convodex.server.dialects.sqlite import SQLiteDatabase, SQLiteDialect
from convodex.server.journal import append_entry
from convodex.server.projection import NewEntry, new_entry, parse_payload, payload_hash
from convodex.server.search import search_messages
from pg import TempPostgres  # tests/pg.py: a throwaway PostgreSQL
from server_fixtures import server_process  # tests/: `convodex server serve`

RARE = "quetzalcoatlus"  # planted in ~1 entry in 10,000
COMMON = "system"  # the most frequent vocabulary word
MID = "harbor"  # planted in ~1 entry in 100
TWO_CHAR = "q7"  # a 2-character query (raw JSON path), planted in ~1 entry in 1,000
SESSION_SIZE = 100
START = 1_700_000_000_000_000


def vocabulary(rng: random.Random, size: int = 4000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(size)}
    words -= {RARE, COMMON, MID}
    return [COMMON, *sorted(words)]


def corpus(
    entries: int, accounts: int, seed: int = 7
) -> Iterator[tuple[int, int, int, int, dict[str, Any]]]:
    """``(account, session, seq, created_at, message)`` in session order."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    sessions = max(1, entries // SESSION_SIZE)
    made = 0
    for session in range(sessions):
        account = session % accounts
        base = START + rng.randrange(365 * 86_400_000_000)
        count = SESSION_SIZE if session < sessions - 1 else entries - made
        for seq in range(1, count + 1):
            text_words = rng.choices(words, weights, k=rng.randint(8, 25))
            if rng.random() < 0.0001:
                text_words.insert(rng.randrange(len(text_words)), RARE)
            if rng.random() < 0.01:
                text_words.insert(rng.randrange(len(text_words)), MID)
            if rng.random() < 0.001:
                text_words.insert(rng.randrange(len(text_words)), TWO_CHAR)
            text = " ".join(text_words)
            kind = seq % 5
            message: dict[str, Any]
            if kind in (1, 3):
                message = {"role": "user", "content": text}
            elif kind == 2:
                message = {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": text},
                        {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"cmd": "ls"}},
                    ],
                }
            elif kind == 4:
                message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
            else:
                message = {"role": "toolResult", "toolCallId": "c", "content": text}
            yield account, session, seq, base + seq * 1_000_000, message
            made += 1


def bench_owners(accounts: int) -> list[str]:
    return [f"acc{a}" for a in range(accounts)]


def session_kind(session: int) -> str:
    return "channel" if session % 10 == 9 else "personal"


def personal_owner(session: int, owners: list[str]) -> str | None:
    """``entries.personal_owner`` for the bulk-loaded entries of ``session``."""
    return owners[session % len(owners)] if session_kind(session) == "personal" else None


def load_postgres(
    db: Database, url: str, entries: int, owners: list[str], *, new_accounts: bool = True
) -> float:
    """COPY the corpus in (creating the ``owners`` accounts unless they exist); returns
    seconds. Secondary indexes are rebuilt afterwards."""
    started = time.perf_counter()
    accounts = len(owners)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
            " AND indexname IN ('entries_text_trgm', 'entries_shown_recent',"
            " 'entries_unprojected', 'entries_personal_recent', 'sessions_owner')"
        ).fetchall()
        for name, _ in indexes:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        with conn.cursor() as cur:
            if new_accounts:
                with cur.copy(
                    "COPY accounts (id, name, is_admin, token_hash, created_at) FROM STDIN"
                ) as copy:
                    for a, owner in enumerate(owners):
                        copy.write_row((owner, f"user{a}", a == 0, f"h{a}", "2024-01-01"))
            sessions = max(1, entries // SESSION_SIZE)
            with cur.copy(
                "COPY sessions (id, owner_id, kind, title, created_at, head_seq) FROM STDIN"
            ) as copy:
                for s in range(sessions):
                    size = SESSION_SIZE if s < sessions - 1 else entries - SESSION_SIZE * s
                    copy.write_row(
                        (
                            f"s{s}",
                            owners[s % accounts],
                            session_kind(s),
                            f"t{s}",
                            "2024-01-01",
                            size,
                        )
                    )
            with cur.copy(
                "COPY entries (session_id, seq, created_at, parent_seq, role, payload,"
                " payload_hash, meta, discarded, on_branch, projected, text, personal_owner)"
                " FROM STDIN"
            ) as copy:
                for _, session, seq, created, message in corpus(entries, accounts):
                    entry = new_entry(message, meta=False)
                    copy.write_row(
                        (
                            f"s{session}",
                            seq,
                            db.dialect.ts_param(created),
                            seq - 1 or None,
                            entry.role,
                            entry.payload,
                            entry.payload_hash,
                            False,
                            False,
                            True,
                            True,
                            entry.text,
                            personal_owner(session, owners),
                        )
                    )
        for _, definition in indexes:
            conn.execute(definition)
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - started


def load_sqlite(
    db: Database, entries: int, owners: list[str], *, new_accounts: bool = True
) -> float:
    started = time.perf_counter()
    sessions = max(1, entries // SESSION_SIZE)
    accounts = len(owners)
    with db.write() as tx:
        for a, owner in enumerate(owners if new_accounts else []):
            tx.run(
                "INSERT INTO accounts (id, name, is_admin, token_hash, created_at)"
                " VALUES (?, ?, ?, ?, 0)",
                (owner, f"user{a}", a == 0, f"h{a}"),
            )
        for s in range(sessions):
            size = SESSION_SIZE if s < sessions - 1 else entries - SESSION_SIZE * s
            tx.run(
                "INSERT INTO sessions (id, owner_id, kind, title, created_at, head_seq)"
                " VALUES (?, ?, ?, ?, 0, ?)",
                (f"s{s}", owners[s % accounts], session_kind(s), f"t{s}", size),
            )
        for _, session, seq, created, message in corpus(entries, accounts):
            entry = new_entry(message, meta=False)
            tx.run(
                "INSERT INTO entries (session_id, seq, created_at, parent_seq, role, payload,"
                " payload_hash, on_branch, projected, text, personal_owner)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, TRUE, TRUE, ?, ?)",
                (
                    f"s{session}",
                    seq,
                    created,
                    seq - 1 or None,
                    entry.role,
                    entry.payload,
                    entry.payload_hash,
                    entry.text,
                    personal_owner(session, owners),
                ),
            )
    with db.write() as tx:
        tx.run("ANALYZE")
    return time.perf_counter() - started


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def time_queries(
    db: Database, repeat: int, label: str
) -> dict[tuple[str, str], tuple[float, float, int]]:
    admin = Caller("acc0", "user0", True)
    member = Caller("acc1", "user1", False)
    results: dict[tuple[str, str], tuple[float, float, int]] = {}
    for query in (RARE, MID, COMMON, TWO_CHAR):
        for scope, caller in (("account", member), ("instance", admin)):
            search_messages(db, caller, query, 50, scope)  # warm
            samples = []
            hits = 0
            for _ in range(repeat):
                began = time.perf_counter()
                hits = len(search_messages(db, caller, query, 50, scope))
                samples.append((time.perf_counter() - began) * 1000)
            p50, p95 = percentiles(samples)
            results[(query, scope)] = (p50, p95, hits)
    return results


def print_latency(
    title: str,
    indexed: dict[tuple[str, str], tuple[float, float, int]],
    scanned: dict[tuple[str, str], tuple[float, float, int]],
) -> None:
    print(f"\n{title}: search latency, limit 50 (ms)")
    print(
        f"{'query':<16}{'scope':<10}{'hits':>5}{'p50':>9}{'p95':>9}"
        f"{'p50 no idx':>12}{'p95 no idx':>12}{'p50 ratio':>11}"
    )
    for key, (p50, p95, hits) in indexed.items():
        s50, s95, _ = scanned[key]
        print(
            f"{key[0]:<16}{key[1]:<10}{hits:>5}{p50:>9.2f}{p95:>9.2f}"
            f"{s50:>12.2f}{s95:>12.2f}{s50 / p50:>10.1f}x"
        )


def journal_only_append(db: Database, session_id: str, message: dict[str, Any]) -> int:
    """:func:`append` without its projection (no shown text, no search row): the
    ratio's baseline, through the same statements."""
    text, decoded = parse_payload(message)
    entry = NewEntry(text, payload_hash(text), str(decoded["role"]), False, None)
    with db.write() as tx:
        return append_entry(tx, session_id, entry, now_micros())


def append_rates(db: Database, count: int, round_size: int = 512) -> tuple[float, float]:
    """Appends per second with projection (the journal API) and journal only.

    The two alternate in rounds of ``round_size`` appends (each round includes its
    share of SQLite's batched index catch-up); each rate is its best round, the one
    other processes on a shared machine disturbed least.
    """
    messages = [m for *_, m in corpus(count, 1, seed=99)]
    rounds: dict[str, list[float]] = {"projection": [], "journal": []}
    variants: dict[str, Callable[[Database, str, dict[str, Any]], int]] = {
        "projection": lambda d, s, m: append(d, s, m),
        "journal": journal_only_append,
    }
    for start in range(0, count, round_size):
        batch = messages[start : start + round_size]
        for name, fn in variants.items():
            sid = create_session(db, "acc1", title=f"append bench {name}")
            began = time.perf_counter()
            for message in batch:
                fn(db, sid, message)
            rounds[name].append(len(batch) / (time.perf_counter() - began))
    return max(rounds["projection"]), max(rounds["journal"])


def print_appends(title: str, rates: tuple[float, float]) -> None:
    projected, journal_only = rates
    print(f"\n{title}: appends, one transaction each (best of alternating rounds)")
    print(
        f"  with projection {projected:>9.0f}/s   journal only {journal_only:>9.0f}/s"
        f"   cost ratio {journal_only / projected:.2f}x"
    )


def _mix_clients(
    base: str, writers: list[tuple[str, str]], searchers: list[str], admin: str, seconds: float
) -> list[tuple[str, int, float]]:
    """``(kind, status, ms)`` of every request: each writer appends to its own session
    while each searcher cycles through the query mix, for ``seconds``.

    Each client is a thread with one keep-alive ``http.client`` connection: an order of
    magnitude less CPU per request than an async httpx client, which on a two-core
    machine would otherwise take the CPU the server is being measured on."""
    results: list[tuple[str, int, float]] = []
    stop = time.monotonic() + seconds
    queries = [RARE, MID, COMMON, TWO_CHAR, "zz", "harbor system"]
    address = urlsplit(base)

    def timed(
        conn: http.client.HTTPConnection,
        kind: str,
        method: str,
        url: str,
        token: str,
        body: bytes | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        began = time.perf_counter()
        try:
            conn.request(method, url, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            status = 0
            conn.close()
        results.append((kind, status, (time.perf_counter() - began) * 1000))

    def write_loop(token: str, session: str, n: int) -> None:
        rng = random.Random(n)
        words = vocabulary(random.Random(7))[:400]
        conn = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port)
        while time.monotonic() < stop:
            text = " ".join(rng.choices(words, k=rng.randint(8, 25)))
            role = "user" if rng.random() < 0.5 else "assistant"
            body = json.dumps({"payload": {"role": role, "content": text}}).encode()
            timed(conn, "write", "POST", f"/brain/sessions/{session}/entries", token, body)
        conn.close()

    def search_loop(token: str, n: int) -> None:
        conn = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port)
        i = n
        while time.monotonic() < stop:
            params = {"q": queries[i % len(queries)], "limit": "20"}
            used = token
            if i % 5 == 0:
                params["scope"], used = "instance", admin
            timed(conn, "search", "GET", "/brain/search?" + urlencode(params), used)
            i += 1
        conn.close()

    threads = [
        threading.Thread(target=write_loop, args=(token, session, n))
        for n, (token, session) in enumerate(writers)
    ]
    threads += [threading.Thread(target=search_loop, args=(t, n)) for n, t in enumerate(searchers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def concurrent_mix(db_url: str, entries: int, seconds: float, clients: int) -> None:
    """``clients`` writers + ``clients`` searchers over HTTP against a real
    ``convodex server serve``; prints counts by status and latency percentiles."""
    with open_database(db_url) as db:
        db.migrate()
        people = [add_account(db, f"mix{n}", is_admin=n == 0) for n in range(clients)]
        owners = [p.id for p in people]
        if db.dialect.name == "postgresql":
            load_postgres(db, db_url, entries, owners, new_accounts=False)
        else:
            load_sqlite(db, entries, owners, new_accounts=False)
        writers = [
            (p.token, create_session(db, p.id, title=f"mix writer {n}"))
            for n, p in enumerate(people)
        ]
    tokens = [p.token for p in people]
    with tempfile.TemporaryDirectory(prefix="cdxmix-") as tmp:
        with server_process(db_url, Path(tmp) / "server.log") as server:
            server_cpu = cpu_seconds(server.process.pid)
            client_cpu = time.process_time()
            results = _mix_clients(server.url, writers, tokens, tokens[0], seconds)
            server_cpu = cpu_seconds(server.process.pid) - server_cpu
            client_cpu = time.process_time() - client_cpu
    name = "PostgreSQL" if db_url.startswith("postgresql") else "SQLite"
    print(
        f"\n{name}: concurrent HTTP mix, {clients} writers + {clients} searchers for "
        f"{seconds:g} s over {entries:,} loaded entries; CPU used: server "
        f"{server_cpu / len(results) * 1000:.1f} ms per request, client {client_cpu:.1f} s"
    )
    for kind in ("write", "search"):
        latencies = [ms for k, _, ms in results if k == kind]
        statuses = Counter(status for k, status, _ in results if k == kind)
        ok = sum(n for status, n in statuses.items() if 200 <= status < 300)
        errors = (
            ", ".join(
                f"{status or 'transport'}: {n}"
                for status, n in sorted(statuses.items())
                if not 200 <= status < 300
            )
            or "none"
        )
        p50, p95 = percentiles(latencies)
        print(
            f"  {kind:<7}{len(latencies):>7} requests  {len(latencies) / seconds:>6.0f}/s"
            f"  p50 {p50:>7.1f} ms  p95 {p95:>7.1f} ms  ok {ok}  errors: {errors}"
        )


def bench_postgres(args: argparse.Namespace) -> None:
    with TempPostgres(settings={"shared_buffers": "1GB", "work_mem": "32MB"}) as pg:
        if "mix" in args.only:
            concurrent_mix(pg.create_database("mix"), args.mix_entries, args.mix_seconds, 20)
        if not {"search", "append"} & set(args.only):
            return
        url = pg.create_database("bench")
        with open_database(url, pool_size=2) as db:
            db.migrate()
            seconds = load_postgres(db, url, args.entries, bench_owners(args.accounts))
            print(
                f"\nPostgreSQL: loaded {args.entries:,} entries across {args.accounts:,} "
                f"accounts in {seconds:.0f}s"
            )
            if "search" in args.only:
                indexed = time_queries(db, args.repeat, "indexed")
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("DROP INDEX entries_text_trgm")
                scanned = time_queries(db, max(3, args.repeat // 4), "no index")
                print_latency("PostgreSQL", indexed, scanned)
            if "append" in args.only:
                # After the search timings: the appends add to an account they measure.
                print_appends("PostgreSQL", append_rates(db, args.appends))


def bench_sqlite(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="cdxbench-") as tmp:
        if "mix" in args.only:
            mix_url = f"sqlite:///{Path(tmp) / 'mix.sqlite'}"
            concurrent_mix(mix_url, args.mix_entries, args.mix_seconds, 20)
        if not {"search", "append"} & set(args.only):
            return
        path = Path(tmp) / "server.sqlite"
        with SQLiteDatabase(path) as db:
            db.migrate()
            seconds = load_sqlite(db, args.sqlite_entries, bench_owners(args.accounts))
            print(
                f"\nSQLite: loaded {args.sqlite_entries:,} entries across {args.accounts:,} "
                f"accounts in {seconds:.0f}s"
            )
            if "search" in args.only:
                indexed = time_queries(db, args.repeat, "indexed")
                with SQLiteDatabase(path) as scan_db:
                    scan_db.dialect = SQLiteDialect(trigram_index=False)
                    scanned = time_queries(scan_db, max(3, args.repeat // 4), "no index")
                print_latency("SQLite", indexed, scanned)
            if "append" in args.only:
                print_appends("SQLite", append_rates(db, args.appends))


PARTS = ("mix", "append", "search")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--entries", type=int, default=1_000_000, help="PostgreSQL entries")
    parser.add_argument("--sqlite-entries", type=int, default=200_000)
    parser.add_argument("--accounts", type=int, default=1_000)
    parser.add_argument("--appends", type=int, default=4_096)
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per query")
    parser.add_argument("--mix-seconds", type=float, default=20.0)
    parser.add_argument("--mix-entries", type=int, default=20_000, help="loaded before the mix")
    parser.add_argument(
        "--only", action="append", choices=PARTS, help="run only these parts (repeatable)"
    )
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--skip-sqlite", action="store_true")
    args = parser.parse_args(argv)
    args.only = tuple(args.only or PARTS)
    if not args.skip_postgres:
        bench_postgres(args)
    if not args.skip_sqlite:
        bench_sqlite(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
