#!/usr/bin/env python3
"""Fault injection on the local catalog (issue 12): kills and damage, counted.

Three runs over one generated corpus (50 MiB of native sessions by default), each
checked against a clean build of the same corpus:

1. SIGKILL of ``convodex index`` at random moments during a rebuild (``--index-kills``);
2. SIGKILL of ``convodex serve`` at random moments while its background scheduler
   rebuilds (``--serve-kills``);
3. random pages of the clean catalog (>= 16 MB) overwritten (``--corruptions`` runs of
   ``--pages`` pages each), then ``convodex search`` and ``convodex index`` run on it.

A fault is *survived* when no command printed a traceback or hung, and the catalog
passed ``PRAGMA integrity_check`` afterwards. Something is *lost* when, once ``convodex
index`` has finished, the catalog's hits, rows and checkpoints differ from the clean
build's, when an integrity check fails, or when a source file changed. Lost must be 0.

Usage: bench/fault_injection.py [--mb 50] [--seed 1] [--corpus DIR] [--index-kills 30]
       [--serve-kills 10] [--corruptions 30] [--pages 30]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import corpus
from convodex.catalog.db import open_catalog
from convodex.catalog.plan import SearchRequest
from convodex.catalog.rowids import TABLES
from convodex.catalog.search import Searcher
from convodex.config import catalog_path
from convodex.models import to_builtins
from convodex.sqlite import sqlite3
from procs import children, running

QUERIES = ("needle0", "needle3", "needle17", "the", "error", "migration", "迁移")
CLI_TIMEOUT = 600.0
MIN_CATALOG_BYTES = 16 * 1000 * 1000
SERVE_START_SECONDS = 1.0  # about how long `convodex serve` takes to start indexing


@dataclass
class Tally:
    """Counts of one kind of fault."""

    name: str
    injected: int = 0
    survived: int = 0
    lost: int = 0
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        extra = f"  ({'; '.join(self.notes)})" if self.notes else ""
        return (
            f"{self.name:<28} injected {self.injected:>3}   survived {self.survived:>3}   "
            f"lost {self.lost}{extra}"
        )


def convodex(*args: str, timeout: float = CLI_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "convodex", *args], capture_output=True, text=True, timeout=timeout
    )


def clean_run(done: subprocess.CompletedProcess[str]) -> bool:
    return done.returncode == 0 and "Traceback" not in done.stderr + done.stdout


def integrity(cache: Path) -> str:
    path = catalog_path(cache)
    if not path.exists():
        return "ok"
    db = sqlite3.connect(str(path))
    try:
        return ";".join(str(r[0]) for r in db.execute("PRAGMA integrity_check"))[:200]
    except sqlite3.DatabaseError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        db.close()


def snapshot(cache: Path, queries: Sequence[str] = QUERIES) -> dict[str, Any]:
    """Everything a search can see: hits of several queries, every row's address
    (source, message, part, kind, sub-agent bit), checkpoints, spans (the crash test
    and this bench compare it with a clean build's)."""
    with open_catalog(cache) as catalog:
        out: dict[str, Any] = {}
        for query in queries:
            for kinds in ([], ["tool_output"]):
                page = Searcher(catalog).search(SearchRequest(query=query, kinds=kinds, limit=200))
                out[f"{query}:{kinds}"] = [
                    (h["sessionPath"], h["messageIndex"], h["partIndex"], h["kind"])
                    for h in to_builtins(page)["hits"]
                ]
        db = catalog.db
        for table, layout in TABLES.items():
            out[table] = db.execute(
                f"SELECT src.path, m.message, "
                f"m.first_part + {layout.part_sql('t.rowid')}, "
                f"{layout.kind_sql('t.rowid')}, {layout.subagent_sql('t.rowid')} FROM {table} AS t "
                f"JOIN messages AS m ON m.base = {layout.base_sql('t.rowid')} "
                f"JOIN slots AS s ON s.slot = {layout.slot_sql('t.rowid')} "
                "JOIN sources AS src ON src.id = s.source_id ORDER BY 1, 2, 3, 4"
            ).fetchall()
            count = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            if count != len(out[table]):
                out[f"{table}:unaddressed"] = count - len(out[table])
        out["sources"] = db.execute(
            "SELECT path, byte_offset, message_count, size, signature, pending, health, "
            "line_errors FROM sources ORDER BY path"
        ).fetchall()
        out["spans"] = db.execute(
            "SELECT s.path, m.first_index, m.count, m.spans FROM spans m "
            "JOIN sources s ON s.id = m.source_id ORDER BY s.path, m.first_index"
        ).fetchall()
    return out


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def reset(cache: Path) -> None:
    shutil.rmtree(cache, ignore_errors=True)


def index_args(root: Path, cache: Path) -> list[str]:
    return ["index", "--root", str(root), "--cache-dir", str(cache)]


def finish(root: Path, cache: Path, expected: dict[str, Any], tally: Tally, label: str) -> None:
    """Run the index to its end; anything that differs from the clean build is lost."""
    done = convodex(*index_args(root, cache))
    if not clean_run(done):
        tally.lost += 1
        tally.notes.append(f"{label}: index after the fault failed")
        return
    state = integrity(cache)
    if state != "ok":
        tally.lost += 1
        tally.notes.append(f"{label}: integrity {state}")
    elif snapshot(cache) != expected:
        tally.lost += 1
        tally.notes.append(f"{label}: hits or rows differ from a clean build")


def kill_index(root: Path, work: Path, expected: dict[str, Any], full: float, n: int) -> Tally:
    tally = Tally("SIGKILL convodex index")
    cache = work / "killed-index"
    rng = random.Random(20261201)
    while tally.injected < n:
        proc = subprocess.Popen(
            [sys.executable, "-m", "convodex", *index_args(root, cache)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            proc.wait(rng.uniform(0.0, full))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            _, stderr = proc.communicate()
            tally.injected += 1
            state = integrity(cache)
            if state == "ok" and "Traceback" not in stderr:
                tally.survived += 1
            elif state == "ok":
                tally.notes.append(f"kill {tally.injected}: a traceback")
            else:
                tally.lost += 1
                tally.notes.append(f"kill {tally.injected}: integrity {state}")
            continue
        _, stderr = proc.communicate()
        # It finished first: check it, then start a new rebuild so kills land mid-build.
        if proc.returncode != 0 or snapshot(cache) != expected:
            tally.lost += 1
            tally.notes.append("a resumed run finished with other hits")
        reset(cache)
    finish(root, cache, expected, tally, "after the index kills")
    return tally


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def kill_serve(root: Path, work: Path, expected: dict[str, Any], full: float, n: int) -> Tally:
    """Each run starts a rebuild from nothing, is killed in it, and is then finished by
    ``convodex index``: every kill's aftermath is compared with the clean build."""
    tally = Tally("SIGKILL convodex serve")
    cache = work / "killed-serve"
    rng = random.Random(20261202)
    for number in range(1, n + 1):
        reset(cache)
        command = [
            *("serve", "--root", str(root), "--cache-dir", str(cache)),
            *("--port", str(free_port()), "--rescan", "3600"),
        ]
        log = work / f"serve-{number}.stderr"
        with open(log, "w", encoding="utf-8") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "convodex", *command], stdout=subprocess.DEVNULL, stderr=err
            )
            # The moment of the fault (not a wait for anything): start-up, then the rebuild.
            time.sleep(rng.uniform(SERVE_START_SECONDS, SERVE_START_SECONDS + full))
            left = children(proc.pid)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        tally.injected += 1
        helpers_gone = all_exit(left)
        state = integrity(cache)
        quiet = "Traceback" not in log.read_text("utf-8")
        if state == "ok" and quiet and helpers_gone:
            tally.survived += 1
        else:
            why = f"integrity {state}" if state != "ok" else "a traceback or a stray helper"
            tally.notes.append(f"kill {number}: {why}")
        finish(root, cache, expected, tally, f"after serve kill {number}")
    return tally


def all_exit(pids: list[int], timeout: float = 30.0) -> bool:
    """Whether the processes a killed parent left behind exit by themselves (an index
    helper notices at its next send)."""
    deadline = time.monotonic() + timeout
    while any(running(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def damage(path: Path, rng: random.Random, pages: int) -> None:
    """Overwrite random pages (never the header page) with random bytes."""
    with open(path, "r+b") as handle:
        header = handle.read(100)
        page_size = int.from_bytes(header[16:18], "big") or 65536
        count = path.stat().st_size // page_size
        for page in rng.sample(range(1, count), pages):
            handle.seek(page * page_size)
            handle.write(rng.randbytes(page_size))


def corrupt(
    root: Path, work: Path, clean: Path, expected: dict[str, Any], n: int, pages: int
) -> Tally:
    tally = Tally(f"{pages} damaged pages")
    rng = random.Random(20261203)
    source = catalog_path(clean)
    for number in range(1, n + 1):
        cache = work / "damaged"
        reset(cache)
        target = catalog_path(cache)
        target.parent.mkdir(parents=True, mode=0o700)
        shutil.copyfile(source, target)
        damage(target, rng, pages)
        tally.injected += 1
        searched = convodex("search", rng.choice(QUERIES), "--json", "--cache-dir", str(cache))
        indexed = convodex(*index_args(root, cache), "--json")
        state = integrity(cache)
        if clean_run(searched) and clean_run(indexed) and state == "ok":
            tally.survived += 1
        else:
            why = "search" if not clean_run(searched) else "index" if not clean_run(indexed) else ""
            tally.notes.append(f"run {number}: {why or 'integrity ' + state}")
        if state != "ok" or snapshot(cache) != expected:
            tally.lost += 1
    return tally


def uptime() -> str:
    done = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    return f"uptime: {done.stdout.strip()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus.add_arguments(ap, mb=50)
    ap.add_argument("--index-kills", type=int, default=30)
    ap.add_argument("--serve-kills", type=int, default=10)
    ap.add_argument("--corruptions", type=int, default=30)
    ap.add_argument("--pages", type=int, default=30)
    args = ap.parse_args()
    root = (
        Path(args.corpus) if args.corpus else Path(corpus.cached("native", args.mb, args.seed).out)
    )
    print(uptime())
    hashes = tree_hashes(root)
    with tempfile.TemporaryDirectory(prefix="convodex-faults-") as tmp:
        work = Path(tmp)
        clean = work / "clean"
        started = time.monotonic()
        done = convodex(*index_args(root, clean))
        if not clean_run(done):
            raise SystemExit(f"error: the clean build failed: {done.stderr.strip()[-300:]}")
        full = time.monotonic() - started
        size = catalog_path(clean).stat().st_size
        print(f"corpus {root}: clean build {full:.1f} s, catalog {size / 1e6:.1f} MB")
        if size < MIN_CATALOG_BYTES:
            print(f"note: the catalog is under {MIN_CATALOG_BYTES / 1e6:.0f} MB; use a larger --mb")
        expected = snapshot(clean)
        tallies = [
            kill_index(root, work, expected, full, args.index_kills),
            kill_serve(root, work, expected, full, args.serve_kills),
            corrupt(root, work, clean, expected, args.corruptions, args.pages),
        ]
    changed = sum(1 for path, digest in tree_hashes(root).items() if hashes.get(path) != digest)
    for tally in tallies:
        print(tally.line())
    print(f"source files changed: {changed} of {len(hashes)}")
    lost = sum(t.lost for t in tallies) + changed
    print(
        f"faults injected {sum(t.injected for t in tallies)}, survived "
        f"{sum(t.survived for t in tallies)}, lost {lost}"
    )
    print(uptime())
    if lost:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
