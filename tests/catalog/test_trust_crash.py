"""Crash safety (SPEC L5, L8): SIGKILL a real ``convodex index`` at random moments.

Every kill must leave a catalog that passes ``PRAGMA integrity_check``; finishing
the index must give exactly the hits of a clean build; no source file changes. The
clean build is the core's alone; the killed runs take turns with no accelerator and
with every one at work (``CONVODEX_ACCELERATORS=eager``: a helper process reading,
bands following each commit), and the last run has them all: the accelerators change
nothing but time, also across crashes.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from convodex.config import catalog_path
from corpus import generate as generate_corpus
from fault_injection import integrity, snapshot
from helpers import tree_hashes

KILLS = 22
QUERIES = ["needle0", "needle3", "needle17", "error", "the", "migration", "数据库", "索引"]


# The stock command commits about every 2 to 8 MiB, so on a small corpus a kill lands
# before or inside its few commits; the same CLI with 64 KiB commit groups is killed
# too, so kills also land between many commits and later runs resume from them.
SMALL_COMMITS = (
    "import sys; import convodex.catalog.indexer as i; i.COMMIT_BYTES = 64 * 1024; "
    "from convodex.cli.main import main; sys.argv[0] = 'convodex'; main()"
)


def index_command(corpus: Path, cache: Path, small_commits: bool = False) -> list[str]:
    start = [sys.executable, "-c", SMALL_COMMITS] if small_commits else [sys.executable, "-m"]
    if not small_commits:
        start.append("convodex")
    return [*start, "index", "--root", str(corpus), "--cache-dir", str(cache)]


def accelerated(env: dict[str, str], on: bool) -> dict[str, str]:
    return {**env, "CONVODEX_ACCELERATORS": "eager" if on else "off"}


def run_to_completion(corpus: Path, cache: Path, env: dict[str, str]) -> None:
    done = subprocess.run(index_command(corpus, cache), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_sigkill_at_random_moments_never_corrupts_or_changes_sources(tmp_path: Path) -> None:
    corpus = generate_corpus(tmp_path / "corpus", mb=4, seed=11).path
    hashes = tree_hashes(corpus)
    env = {**os.environ, "CONVODEX_CACHE_HOME": str(tmp_path / "unused-cache")}
    # A killed run cannot remove its helper's channel directory: here, not in /tmp.
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")

    clean = tmp_path / "clean"
    started = time.monotonic()
    run_to_completion(corpus, clean, accelerated(env, False))
    full_run = time.monotonic() - started
    expected = snapshot(clean, QUERIES)
    assert expected["needle0:[]"], "the corpus must be searchable"

    crashed = tmp_path / "crashed"
    rng = random.Random(20260101)
    kills = completed = 0
    deadline = time.monotonic() + 45
    while kills < KILLS and time.monotonic() < deadline:
        proc = subprocess.Popen(
            index_command(corpus, crashed, small_commits=bool(kills % 2)),
            env=accelerated(env, on=bool(kills // 2 % 2)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.0, full_run))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
        else:
            # It finished first: start over from nothing so later kills land mid-build.
            assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
            completed += 1
            assert snapshot(crashed, QUERIES) == expected
            for file in catalog_path(crashed).parent.iterdir():
                file.unlink()
        assert integrity(crashed) == "ok", f"after kill {kills}"
    assert kills >= 20, f"only {kills} kills landed ({completed} runs finished first)"

    run_to_completion(corpus, crashed, accelerated(env, True))
    assert integrity(crashed) == "ok"
    assert snapshot(crashed, QUERIES) == expected
    assert tree_hashes(corpus) == hashes
