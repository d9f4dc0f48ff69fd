#!/usr/bin/env python3
"""Preflight without copies (SPEC L6): what one 64 MiB record costs the native reader.

Each case runs in a fresh process so its peak RSS is its own. "alloc" is the
tracemalloc peak of the step alone (for preflight and full decode: after the
line's bytes are in memory; for the reader cases: the whole read, the line's
bytes included); "RSS" is the process's peak resident set (VmHWM).

  preflight     role/kind/ids of the record: msgspec skips the big string
  full decode   the old way: decode every field, content string included
  reader/system FORMAT.read over a file whose big record is a system message
                (preflight says "no documents", so it is never decoded)
  reader/user   FORMAT.read over a user message (its text must be tokenized)

Usage: bench_preflight.py [--mib 64]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

MIB = 1024 * 1024


def make_file(folder: Path, role: str, size: int) -> Path:
    """A session log whose second line is one record of exactly ``size`` bytes."""
    path = folder / f"{role}.jsonl"
    head = json.dumps({"role": role, "createdAt": 1767225600000, "content": ""})
    filler = size - len(head) - 1  # the newline
    record = head[:-2] + "word " * (filler // 5) + "x" * (filler % 5) + '"}\n'
    assert len(record) == size
    with open(path, "w", encoding="ascii") as handle:
        handle.write('{"role": "user", "content": "small first line"}\n')
        handle.write(record)
        handle.write('{"role": "assistant", "content": "small last line"}\n')
    return path


def peak_rss_mib() -> float:
    """This process's peak RSS since exec (VmHWM; ru_maxrss would include the parent's)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(case: str, path: Path) -> None:
    from convodex.sources import session_log
    from convodex.sources.base import Budget, ReadResult

    budget = Budget()
    started = time.perf_counter()
    if case == "import":
        print(json.dumps({"rss": peak_rss_mib()}))
        return
    if case in ("preflight", "full decode"):
        with open(path, "rb") as handle:
            first = handle.readline()
            line = session_log._next_line(handle, len(first), path, budget)  # held once
        tracemalloc.start()
        if case == "preflight":
            head, shown = session_log.preflight(line)
            assert head.role and shown
        else:
            record = session_log._decode_record(line)
            assert record.content
        _, alloc = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    else:
        tracemalloc.start()
        count = sum(1 for _ in session_log.FORMAT.read(path, ReadResult(0, 0), budget))
        _, alloc = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert count == 3
    seconds = time.perf_counter() - started
    print(json.dumps({"alloc": alloc, "rss": peak_rss_mib(), "seconds": seconds}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=64, help="record size in MiB")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    size = args.mib * MIB
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        user = make_file(folder, "user", size)
        system = make_file(folder, "system", size)
        baseline = subprocess.run(
            [sys.executable, __file__, "--child", "import", str(user)],
            capture_output=True,
            text=True,
            check=True,
        )
        print(f"one record of {size:,} bytes ({args.mib} MiB, the default record budget)")
        rss = json.loads(baseline.stdout)["rss"]
        print(f"interpreter + reader imported: peak RSS {rss:.1f} MiB")
        print(f"{'case':<16}{'alloc (tracemalloc)':>22}{'peak RSS':>12}{'time':>10}")
        for case, path in [
            ("preflight", user),
            ("full decode", user),
            ("reader/system", system),
            ("reader/user", user),
        ]:
            out = subprocess.run(
                [sys.executable, __file__, "--child", case, str(path)],
                capture_output=True,
                text=True,
                check=True,
            )
            figures = json.loads(out.stdout)
            alloc = figures["alloc"]
            shown = f"{alloc / 1024:.1f} KiB" if alloc < MIB else f"{alloc / MIB:.1f} MiB"
            print(f"{case:<16}{shown:>22}{figures['rss']:>9.1f} MiB{figures['seconds']:>9.3f}s")


if __name__ == "__main__":
    main()
