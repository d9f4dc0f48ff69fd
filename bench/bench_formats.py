"""Index throughput per agent format, beside its parse floor and the native reader's.

One row per writer of the project's generator (corpus.py: one cached corpus per format
in bench/.corpus/; or, with ``--corpus DIR``, that directory's format roots, as
``corpus.py DIR --format all`` lays them out). Each is indexed with the real indexer into
a fresh catalog (``PATH:format``, so no sniffing) and compared with its parse floor: the
files its reader reads, read and decoded, nothing else —
  - JSONL: every line JSON-decoded; JSON (sessions, exports, manifests, OpenCode's file
    per message and per part): each file decoded whole;
  - Markdown (Aider's history and prompt log): read and UTF-8 decoded;
  - SQLite (``opencode.db``, Cursor's ``store.db`` and ``state.vscdb``): every table read
    in one scan with the same driver as the readers, every JSON value decoded (ids, hex and
    protobuf values are read, not parsed): what it costs to get the JSON out of the
    database, without the per-session and per-message queries a reader needs.
MB is what the floor read (file bytes; for a database, the bytes of its values), and both
rates divide it. ``vs native`` is the index rate over the native session log's in the same
run; a format under 25% of it is marked with the reason (``REASONS``). Formats carry the
same conversations in more or fewer bytes (a native log holds about twice the sessions a
Claude Code project does per MB), so ``sessions/s`` (sessions of a generated corpus over
the index time) compares the readers on equal content.

Readers the generator has no writer for (agents that write another agent's format,
agents read from their public samples only) get a row each from their samples in
tests/fixtures, copied under distinct names until ``--sample-mb`` MB (``sample:`` rows;
the same bytes again and again, so a rate, not a corpus); a reader of one database
holding every session (Goose, Hermes, Zed) gets its SQL sample's rows copied into one
database of that size.

Usage: python bench/bench_formats.py [--mb 100] [--seed 1] [--corpus DIR] [--runs 1]
                                     [--formats native,qwen,…|all] [--profile N]
                                     [--sample-mb 4]
Figures on a shared machine are noisy: ``--runs 2`` keeps the better of two. ``--profile N``
also indexes each format in this process alone (no helper process) under cProfile and
prints its N most expensive functions: where a slow reader spends its time.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus
from bench_local import parse_floor, transcripts
from convodex.catalog.db import open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing
from convodex.sources.roots import resolve_root
from convodex.sqlite import sqlite3

BASELINE = "native"
FLOOR_SHARE = 0.25  # no format below this share of the native reader's rate, unless …
# … for a reason that is the format's, not the reader's (checked against a profile).
REASONS = {
    "opencode": "a file per message and per part: ~2,000 files/MB to open, read and stat",
    "cursor-store": "a SQLite file per session, opened read-only once to list and once to read",
}
DATABASES = ("opencode.db", "store.db", "state.vscdb", "sessions.db", "state.db", "threads.db")
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
# Readers without a corpus writer: (public sample, where copy ``n`` goes in the root).
SAMPLES = {
    "trae": ("trae/agentsview-rollout_subagent.jsonl", "2026/08/01/rollout-{n:06d}.jsonl"),
    "iflow": (
        "iflow/agentsview/session-5de701fc-7454-4858-a249-95cac4fd3b51.jsonl",
        "project/session-{n:06d}.jsonl",
    ),
    "openclaw": ("openclaw/agent-sessions-large.jsonl", "main/sessions/{n:06d}.jsonl"),
    "mistral_vibe": (
        "mistral-vibe/irrlicht/3-1_foreground-subagent/transcript.jsonl",
        "session_{n:06d}/messages.jsonl",
    ),
    "grok": ("grok/agent-sessions/chat_history.jsonl", "cwd/{n:06d}/chat_history.jsonl"),
    "amp": ("amp/idea-de-espend-ml-llm/T-019c2505-6bed-73de-8e27-51899656b47b.json", "T-{n}.json"),
    "kimi": (
        "kimi/agent-sessions-assistant_tools.jsonl",
        "wd_project_0123456789ab/session_{n:06d}/agents/main/wire.jsonl",
    ),
    "antigravity": (
        "antigravity/irrlicht/3-1_foreground-subagent/transcript.jsonl",
        "{n:06d}/.system_generated/logs/transcript.jsonl",
    ),
    "kiro": ("kiro/irrlicht/2-2_auto-executed-tool-call/transcript.jsonl", "{n:06d}.jsonl"),
    "kiro_ide": (
        "kiro/cli-continues/workspace-sessions/test-workspace/test-session-1.json",
        "workspace-sessions/ws/{n:06d}.json",
    ),
}
# Readers of one database holding every session: (SQL sample, the database's place in
# the root, per table the text columns that name a row or its session). The sample's
# rows are copied, doubling, each copy's names suffixed (so a copied message names its
# copied session), until the database holds ``--sample-mb``.
DATABASE_SAMPLES = {
    "goose": (
        "goose/deja-vu-goose.sql",
        "sessions.db",
        {"sessions": ("id",), "messages": ("session_id", "message_id")},
    ),
    "hermes": ("hermes/deja-vu-hermes.sql", "state.db", {"messages": ("session_id",)}),
    "zed": ("zed/deja-vu-zed.sql", "threads/threads.db", {"threads": ("id",)}),
}
AIDER_FILES = (".aider.chat.history.md", ".aider.input.history")


def database_floor(path: Path) -> int:
    """Every row of every table in one scan each; JSON values decoded. Returns the bytes
    of the values read."""
    decode = msgspec.json.decode
    total = 0
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            quoted = '"' + table.replace('"', '""') + '"'
            for row in db.execute(f"SELECT * FROM {quoted}"):
                for value in row:
                    if isinstance(value, str):
                        value = value.encode("utf-8")
                    if not isinstance(value, bytes):
                        continue
                    total += len(value)
                    if value[:1] in (b"{", b"["):
                        decode(value)
    finally:
        db.close()
    return total


def text_floor(files: list[Path]) -> int:
    total = 0
    for path in files:
        data = path.read_bytes()
        data.decode("utf-8")
        total += len(data)
    return total


def floor(root: Path, others: list[Path]) -> tuple[float, int, int]:
    """Seconds, bytes and files of the parse floor of every source under ``root``, but
    not under ``others`` (other formats' roots inside it: OpenCode's migrated tree)."""

    def mine(paths: list[Path]) -> list[Path]:
        return [p for p in paths if not any(p.is_relative_to(o) for o in others)]

    databases = mine(sorted(p for p in root.rglob("*") if p.name in DATABASES))
    texts = mine(sorted(p for p in root.rglob(".aider.*") if p.name in AIDER_FILES))
    files = mine(transcripts(root))
    started = time.perf_counter()
    _, size = parse_floor(files)
    size += text_floor(texts)
    size += sum(database_floor(p) for p in databases)
    return time.perf_counter() - started, size, len(files) + len(texts) + len(databases)


def index(root: Path, agent: str, cache: Path) -> tuple[float, int]:
    """Seconds and messages of a full index of ``root`` into a fresh catalog."""
    resolved = resolve_root(f"{root}:{agent}")
    with open_catalog(cache) as catalog:
        started = time.perf_counter()
        speed = Wing(Accelerators.from_config())  # as `convodex index` runs
        stats = Indexer(catalog, speed=speed).run([resolved])
        seconds = time.perf_counter() - started
        speed.close()
    if stats.failed:
        raise SystemExit(f"error: {stats.failed} sources of {root} failed to index")
    return seconds, stats.messages


def profile(root: Path, agent: str, cache: Path, top: int) -> None:
    """The functions a whole index of ``root`` spends most of its own time in."""
    resolved = resolve_root(f"{root}:{agent}")
    profiler = cProfile.Profile()
    with open_catalog(cache) as catalog:
        indexer = Indexer(catalog)  # no helper process: reading and committing here
        profiler.runcall(indexer.run, [resolved])
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(top)


def format_root(args: argparse.Namespace, fmt: str) -> tuple[Path, int | None]:
    """A format's root, and how many sessions the generator wrote there (``None`` for
    a ``--corpus`` directory)."""
    given: Path | None = args.corpus
    if given is not None:
        return (given / corpus.WRITERS[fmt].subdir).resolve(), None
    manifest = corpus.cached(fmt, args.mb, args.seed)
    return manifest.root(fmt), len(manifest.sessions)


def nested_roots(args: argparse.Namespace, fmt: str) -> list[Path]:
    """Other formats' roots inside this one's, in a ``--corpus`` of every format."""
    given: Path | None = args.corpus
    if given is None:
        return []  # a corpus per format: nothing else inside
    mine = Path(corpus.WRITERS[fmt].subdir)
    return [
        (given / w.subdir).resolve()
        for w in corpus.WRITERS.values()
        if Path(w.subdir) != mine and Path(w.subdir).is_relative_to(mine)
    ]


def warm(root: Path) -> None:
    """Read every file once: every figure below reads warm files."""
    for path in root.rglob("*"):
        if path.is_file():
            path.read_bytes()


def database_root(fmt: str, mb: float, into: Path) -> Path:
    """A root holding one database: the public sample's rows, copied to about ``mb`` MB."""
    sql, place, names = DATABASE_SAMPLES[fmt]
    root = into / fmt
    path = root / place
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.executescript((FIXTURES / sql).read_text("utf-8"))
    for round_ in range(64):  # doubling: 64 rounds is more than any size needs
        if path.stat().st_size >= mb * 1e6:
            break
        for table, columns in names.items():
            info = list(db.execute(f"SELECT name, pk, type FROM pragma_table_info('{table}')"))
            values = []
            for name, pk, kind in info:
                if name in columns:
                    values.append(f"{name} || '-{round_}'")
                elif pk and kind.upper() == "INTEGER":
                    values.append("NULL")  # a new row id
                else:
                    values.append(name)
            listed = ", ".join(name for name, _, _ in info)
            db.execute(f"INSERT INTO {table} ({listed}) SELECT {', '.join(values)} FROM {table}")
        db.commit()
    db.close()
    return root


def sample_root(fmt: str, mb: float, into: Path) -> Path:
    """A root of copies of a reader's public sample, about ``mb`` MB in all."""
    if fmt in DATABASE_SAMPLES:
        return database_root(fmt, mb, into)
    sample, layout = SAMPLES[fmt]
    data = (FIXTURES / sample).read_bytes()
    root = into / fmt
    for n in range(max(1, int(mb * 1e6 / len(data)))):
        target = root / layout.format(n=n)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


def sample_rows(args: argparse.Namespace, native_rate: float) -> None:
    """A row per reader the generator does not write for, from its public sample."""
    from convodex.sources.registry import FORMATS

    written = {w.agent for w in corpus.WRITERS.values()}
    for fmt in (name for name in FORMATS if name not in written):
        if fmt not in SAMPLES and fmt not in DATABASE_SAMPLES:
            print(f"sample:{fmt:<8} no corpus writer and no sample")
            continue
        work = Path(tempfile.mkdtemp(prefix=f"bench-{fmt}-"))
        try:
            root = sample_root(fmt, args.sample_mb, work / "root")
            floor_s, size, files = min(floor(root, []) for _ in range(args.runs))
            index_s, messages = min(index(root, fmt, work / str(n)) for n in range(args.runs))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        mb = size / 1e6
        rate, floor_rate = mb / index_s, mb / floor_s
        share = rate / native_rate if native_rate else 0.0
        print(
            f"{'sample:' + fmt:<15} {fmt:<15} {mb:>6.1f} {files:>7} {messages:>8} {'-':>10} "
            f"{rate:>10.1f} {floor_rate:>10.1f} {rate / floor_rate:>8.2f} {share:>8.0%}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    corpus.add_arguments(ap, mb=100.0)
    ap.add_argument("--formats", default="all", help="comma-separated writer names, or all")
    ap.add_argument("--runs", type=int, default=1, help="keep the best of N runs (1)")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print a profile")
    ap.add_argument(
        "--sample-mb", type=float, default=4.0, help="MB of each sample-only reader (4)"
    )
    args = ap.parse_args()
    names = corpus.parse_formats(args.formats)
    names = [BASELINE, *(n for n in names if n != BASELINE)]
    print(
        f"{'format':<15} {'agent':<15} {'MB':>6} {'files':>7} {'messages':>8} "
        f"{'sessions/s':>10} {'index MB/s':>10} {'floor MB/s':>10} {'of floor':>8} "
        f"{'vs native':>9}  note"
    )
    native_rate = 0.0
    for fmt in names:
        root, sessions = format_root(args, fmt)
        if not root.is_dir():
            print(f"{fmt:<15} no {root}")
            continue
        agent = corpus.WRITERS[fmt].agent
        warm(root)
        others = nested_roots(args, fmt)
        floor_s, size, files = min(floor(root, others) for _ in range(args.runs))
        work = Path(tempfile.mkdtemp(prefix=f"bench-{fmt}-"))
        try:  # a fresh catalog each run
            index_s, messages = min(index(root, agent, work / str(n)) for n in range(args.runs))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        mb = size / 1e6
        rate, floor_rate = mb / index_s, mb / floor_s
        per_session = "-" if sessions is None else f"{sessions / index_s:.0f}"
        native_rate = native_rate or rate
        share = rate / native_rate
        note = ""
        if share < FLOOR_SHARE:
            note = f"below {FLOOR_SHARE:.0%}: " + REASONS.get(fmt, "NO STATED REASON")
        print(
            f"{fmt:<15} {agent:<15} {mb:>6.1f} {files:>7} {messages:>8} {per_session:>10} "
            f"{rate:>10.1f} "
            f"{floor_rate:>10.1f} {rate / floor_rate:>8.2f} {share:>8.0%}  {note}",
            flush=True,
        )
        if args.profile:
            print(f"profile of {fmt} (reading and committing in one process):")
            with tempfile.TemporaryDirectory(prefix=f"bench-{fmt}-") as cache:
                profile(root, agent, Path(cache), args.profile)
    if args.formats == "all":
        sample_rows(args, native_rate)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores; load average {load}")


if __name__ == "__main__":
    main()
