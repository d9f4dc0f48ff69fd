"""Benchmark the team hub on PostgreSQL (SPEC S6): ranked and literal search p50/p95 at
account and team scope for rare, mid, common, CJK and 2-character queries, and
``convodex sync`` throughput from a generated local history.

    .venv/bin/python bench/bench_hub.py                          # 10M entries, 200 MB sync
    .venv/bin/python bench/bench_hub.py --entries 200000 --mb 20 # a quick run

PostgreSQL is a throwaway cluster started from the installed binaries (like the tests;
fsync off). The journal is bulk-loaded with COPY, every row's text, hash and ranked
tokens computed by the same projection functions the journal uses; 9 accounts in 3
teams, half of each account's sessions shared with its team. The sync half generates a
local history with bench/corpus.py and pushes it through a real HTTP server into
the same cluster. Targets (issue 29): p95 <= 50 ms for ranked and literal
account-scope queries of 3+ characters; sync >= 20 MB/s. Never part of pytest.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import psycopg
from psycopg import sql

import corpus
from baseline import baseline
from convodex.server import Caller, Database, add_account, open_database
from convodex.server.dialects.postgresql import PostgresDialect
from convodex.server.projection import new_entry
from convodex.server.ranked import search_ranked
from convodex.server.search import search_messages
from convodex.server.teams import add_member, create_team
from pg import TempPostgres

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService

SESSION_SIZE = 100
START = 1_700_000_000_000_000
QUERIES = {
    "rare": ("quetzalcoatlus", 10_000),
    "mid": ("harbor", 100),
    "common": ("system", 1),
    "cjk": ("部署", 1_000),
    "2-char": ("q7", 1_000),
}
TEAMS = ("red", "green", "blue")


def _text(rng: random.Random, words: list[str]) -> str:
    picked = [rng.choice(words) for _ in range(rng.randint(6, 30))]
    for word, every in QUERIES.values():
        if every > 1 and rng.randrange(every) == 0:
            picked.insert(rng.randrange(len(picked) + 1), word)
    return " ".join(picked)


#: sessions generated in Python; a larger journal repeats them in SQL (a multiple of 18,
#: so every copy keeps each session's owner, s % 9, and whether it is shared, s % 2)
BASE_SESSIONS = 9_990


def load(url: str, entries: int, seed: int = 7) -> tuple[float, list[Caller]]:
    """COPY ``entries`` entries in; return seconds and the 9 callers (teams joined).

    At most ``BASE_SESSIONS`` sessions (~1 M entries) are generated here, every row's
    text, hash and ranked tokens by the journal's own projection functions; more
    entries repeat that base in SQL under new session ids and later times (the same
    densities of every query class, newest entries last in each partition's heap, as
    a hub that syncs as it goes stores them). Secondary indexes are built afterwards.
    """
    started = time.perf_counter()
    with open_database(url, pool_size=2) as db:
        db.migrate()
        callers = []
        for n in range(9):
            account = add_account(db, f"user{n}")
            callers.append(Caller(account.id, account.name, False))
        team_of: dict[str, str] = {}
        for n, team in enumerate(TEAMS):
            info = create_team(db, team)
            for member in callers[n * 3 : n * 3 + 3]:
                add_member(db, team, member.name)
                team_of[member.id] = info.id
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["system"] + ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(4000)]
    dialect = PostgresDialect()
    sessions = max(1, entries // SESSION_SIZE)
    base_sessions = min(sessions, BASE_SESSIONS)
    base = min(entries, base_sessions * SESSION_SIZE) if sessions > base_sessions else entries
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
        # The secondary indexes (the migrations' own definitions, read back from the
        # catalog) are built after the load: one sorted build each, not millions of
        # incremental inserts. The keys of constraints stay.
        indexes = conn.execute(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.tablename = 'entries'"
            " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)"
        ).fetchall()
        for name, _ in indexes:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        with cur.copy(
            "COPY sessions (id, owner_id, kind, title, created_at, head_seq, team_id, machine,"
            " agent, project, updated_at) FROM STDIN"
        ) as copy:
            for s in range(sessions):
                owner = callers[s % 9]
                shared = team_of[owner.id] if s % 2 else None
                copy.write_row(
                    (f"s{s}", owner.id, "personal", f"session {s}", "2024-01-01", SESSION_SIZE,
                     shared, f"m{s % 4}", "claude_code", f"/work/p{s % 20}", "2024-06-01")
                )  # fmt: skip
        with cur.copy(
            "COPY entries (session_id, seq, created_at, parent_seq, role, payload, payload_hash,"
            " meta, discarded, on_branch, projected, text, personal_owner, team_id, tokens)"
            " FROM STDIN"
        ) as copy:
            for i in range(base):
                s, seq = divmod(i, SESSION_SIZE)
                s = min(s, sessions - 1)
                owner = callers[s % 9]
                role = "user" if seq % 2 == 0 else "assistant"
                entry = new_entry({"role": role, "content": _text(rng, words)}, meta=False)
                stamp = dialect.ts_param(START + i * 1_000_000)
                copy.write_row(
                    (f"s{s}", seq + 1, stamp, seq or None, role, entry.payload,
                     entry.payload_hash, False, False, True, True, entry.text, owner.id,
                     team_of[owner.id] if s % 2 else None, dialect.tokens_param(entry.tokens))
                )  # fmt: skip
        generated = time.perf_counter() - started
        for copy_start in range(base, entries, base):
            # Session s + k * base_sessions, k base lengths later: the same owner and team.
            shift = copy_start // SESSION_SIZE
            count = min(base, entries - copy_start)
            conn.execute(
                "INSERT INTO entries (session_id, seq, created_at, parent_seq, role, payload,"
                " payload_hash, meta, discarded, on_branch, projected, text, personal_owner,"
                " team_id, tokens)"
                " SELECT 's' || (substr(session_id, 2)::bigint + %s), seq,"
                " created_at + make_interval(secs => %s), parent_seq, role, payload,"
                " payload_hash, meta, discarded, on_branch, projected, text, personal_owner,"
                " team_id, tokens FROM entries WHERE created_at < %s ORDER BY created_at",
                (shift, copy_start, dialect.ts_param(START + count * 1_000_000)),
            )
        copied = time.perf_counter() - started
        conn.execute("SET maintenance_work_mem = '1GB'")
        for _, definition in indexes:
            # A partitioned table's index is defined ON ONLY the parent; built ON it,
            # every partition gets its own.
            conn.execute(definition.replace(" ON ONLY ", " ON ", 1).encode())
        indexed = time.perf_counter() - started
        # As autovacuum leaves a live hub: statistics, and the visibility map that lets
        # an index-only scan skip the heap.
        conn.execute("VACUUM ANALYZE")
    seconds = time.perf_counter() - started
    print(
        f"load: {base:,} entries generated in {generated:.0f} s, repeated to {entries:,} by"
        f" {copied - generated:.0f} s, indexes {indexed - copied:.0f} s, vacuum"
        f" {seconds - indexed:.0f} s"
    )
    return seconds, callers


def timed(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(0, int(len(samples) * 0.95) - 1)]


def _query_runner(
    db: Database, caller: Caller, query: str, mode: str, scope: str
) -> Callable[[], int]:
    def run() -> int:
        if mode == "ranked":
            return len(search_ranked(db, caller, query, 20, scope).hits)
        return len(search_messages(db, caller, query, 20, scope))

    return run


def bench_callers(url: str) -> list[Caller]:
    """The 9 callers of a database :func:`load` filled."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id, name FROM accounts WHERE name LIKE 'user_' ORDER BY name"
        ).fetchall()
    return [Caller(str(id_), str(name), False) for id_, name in rows]


def worker(url: str, query: str, mode: str, scope: str, repeat: int) -> None:
    """One figure in this process (``--worker``): what ``--base`` runs in each tree."""
    with open_database(url, pool_size=2) as db:
        run = _query_runner(db, bench_callers(url)[0], query, mode, scope)
        hits = run()
        p50, p95 = timed(run, repeat)
    print(f"{p50} {p95} {hits}")


def _in_tree(tree: Path | None, url: str, query: str, mode: str, scope: str, repeat: int) -> str:
    """One figure measured by a fresh process of this tree or of ``tree``."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "src")
    done = subprocess.run(
        [sys.executable, __file__, "--db", url, "--repeat", str(repeat), "--worker",
         query, mode, scope],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    p50, p95, hits = done.stdout.split()
    return f"{float(p50):8.1f} {float(p95):8.1f} {hits:>5}"


def search_figures(url: str, repeat: int, base: Path | None) -> None:
    """p50/p95 per query class, mode and scope; with ``base``, that tree's figure before
    this tree's, class by class (each figure from a fresh process of its tree)."""
    head = f"{'p50 ms':>8} {'p95 ms':>8} {'hits':>5}"
    columns = f"base {head}   this {head}" if base else head
    print(f"{'query':8} {'mode':8} {'scope':8} {columns}")
    for name, (query, _) in QUERIES.items():
        for mode in ("literal", "ranked"):
            for scope in ("account", "team"):
                figures = [_in_tree(tree, url, query, mode, scope, repeat)
                           for tree in ([base, None] if base else [None])]  # fmt: skip
                load_now = f"load {os.getloadavg()[0]:.1f}"
                print(f"{name:8} {mode:8} {scope:8} {'   '.join(figures)}   {load_now}")


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of process ``pid`` and of its children it has waited
    for (a PostgreSQL backend that exited is counted in the postmaster's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _cluster_cpu(pg: TempPostgres) -> float:
    """CPU time of the whole cluster: the postmaster, its reaped children and every
    live backend and worker."""
    assert pg._process is not None
    root = pg._process.pid
    total = _cpu_seconds(root)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        if int(fields[1]) == root:
            total += sum(int(v) for v in fields[11:13]) / os.sysconf("SC_CLK_TCK")
    return total


def _sync_once(
    pg: TempPostgres, url: str, service: HistoryService, uploads: int, tmp: Path
) -> tuple[float, Any, tuple[float, float, float]]:
    """One first sync of the whole history into an empty hub (``url``, its own database)
    served by ``convodex server serve`` in its own process, as a hub is deployed; with
    the CPU seconds of this machine's side, the hub's process and PostgreSQL."""
    from convodex.hub.settings import HubSettings
    from convodex.hub.sync import Syncer
    from server_fixtures import server_process

    with open_database(url, pool_size=2) as db:
        db.migrate()
        token = add_account(db, "syncer").token
    with server_process(url, tmp / f"hub-{uploads}.log") as hub:
        settings = HubSettings(url=hub.url, token=token, machine="bench")
        cpu = (time.process_time(), _cpu_seconds(hub.process.pid), _cluster_cpu(pg))
        started = time.perf_counter()
        report = Syncer(service, settings, uploads=uploads).run()
        seconds = time.perf_counter() - started
        after = (time.process_time(), _cpu_seconds(hub.process.pid), _cluster_cpu(pg))
        again = Syncer(service, settings, uploads=uploads).run()
    if report.failed or again.sent:
        raise SystemExit(f"sync went wrong: {report.failed} failed, {again.sent} sent again")
    return seconds, report, (after[0] - cpu[0], after[1] - cpu[1], after[2] - cpu[2])


def sync_figures(pg: TempPostgres, mb: float, seed: int) -> None:
    """Generate ``mb`` MiB of local history and push it into an empty hub over HTTP:
    one session at a time (the baseline), then ``UPLOADS`` in flight."""
    from convodex.catalog.service import HistoryService
    from convodex.hub.settings import HubSettings
    from convodex.hub.sync import UPLOADS, Syncer

    root, _ = corpus.for_bench(None, "claude-code", mb, seed)
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CONVODEX_HOME"] = str(Path(tmp) / "home")
        with HistoryService.open(Path(tmp) / "cache", [root]) as service:
            started = time.perf_counter()
            service.index()
            service.tree()  # the listing's summaries, as any earlier command leaves them
            indexed = time.perf_counter() - started
            print(f"sync: {size:.1f} MB of local transcripts (local index first: {indexed:.1f} s)")
            # This machine's half alone: read, redact and encode every session, send none.
            dry = HubSettings(url="http://127.0.0.1:9", token="dry-run", machine="bench")
            started, cpu = time.perf_counter(), time.process_time()
            Syncer(service, dry, dry_run=True).run()
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            print(
                f"  this machine's side alone (--dry-run): {size / seconds:.1f} MB/s"
                f" ({cpu:.2f} CPU s)"
            )
            figures = {}
            for uploads in (1, UPLOADS):
                url = pg.create_database(f"sync{uploads}")
                seconds, report, cpu = _sync_once(pg, url, service, uploads, Path(tmp))
                figures[uploads] = seconds
                rate = f"{report.sent / seconds:.1f} sessions/s, {size / seconds:.1f} MB/s"
                print(
                    f"  {uploads} in flight: {report.sent} sessions"
                    f" ({report.bytes_sent / 1e6:.1f} MB uploaded) in {seconds:.2f} s: {rate};"
                    " a second run sent nothing"
                )
                print(
                    "    CPU seconds: this machine {:.2f}, hub {:.2f}, PostgreSQL {:.2f}"
                    " (per 10 MB local: {:.2f})".format(*cpu, sum(cpu) / size * 10)
                )
    print(f"  {UPLOADS} in flight vs 1: {figures[1] / figures[UPLOADS]:.2f}x (target: >= 20 MB/s)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=10_000_000, help="journal entries (10M)")
    ap.add_argument("--repeat", type=int, default=20, help="runs per query (20)")
    ap.add_argument("--mb", type=float, default=200.0, help="local history to sync, MiB (200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=["search", "sync"], default=None)
    ap.add_argument(
        "--db", help="search an already loaded bench database (a PostgreSQL URL) instead"
    )
    ap.add_argument(
        "--base", help="also measure this older tree (a checkout or git revision), figure by figure"
    )
    ap.add_argument("--worker", nargs=3, metavar=("QUERY", "MODE", "SCOPE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.db, *args.worker, args.repeat)
        return 0
    base = baseline(args.base) if args.base else None
    print(f"uptime: {subprocess.getoutput('uptime').strip()}")
    if args.db:
        search_figures(args.db, args.repeat, base)
    else:
        with TempPostgres() as pg:
            if args.only != "sync":
                url = pg.create_database("hub")
                seconds, _ = load(url, args.entries)
                print(f"loaded {args.entries:,} entries in {seconds:.0f} s")
                search_figures(url, args.repeat, base)
            if args.only != "search":
                sync_figures(pg, args.mb, args.seed)
    print(f"uptime: {subprocess.getoutput('uptime').strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
