"""A short runtime directory (socket addresses hold about 100 bytes) and a catalog of
real sessions with a real service over it, answering on the warm path's socket."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from convodex.catalog.service import Background, HistoryService
from convodex.cli.warm import host
from convodex.warm.server import WarmServer
from helpers import write_session

SESSIONS = {
    "alpha-session-0001": ["rotate the signing keys", "the keys rotate with keys rotate"],
    "beta-session-0002": ["the migration of orders", "run the migration twice"],
    "gamma-session-0003": ["迁移 the database", "the 迁移 finished"],
    "delta-session-0004": ["signing keys again", "the signing key expired"],
}


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cvx-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def history(root: Path, cache_dir: Path, runtime: Path) -> Iterator[HistoryService]:
    """The sessions indexed, and a started service over their catalog."""
    for n, (session_id, texts) in enumerate(SESSIONS.items()):
        messages = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": text}
            for i, text in enumerate(texts)
        ]
        write_session(root, session_id, messages, meta={"cwd": f"/work/p{n}"})
    service = HistoryService.open(cache_dir, [root], background=Background(listen_for_hints=False))
    with service:
        service.index()
        service.start()
        yield service


@pytest.fixture
def warm(history: HistoryService) -> Iterator[WarmServer]:
    server = WarmServer(history, host())
    yield server
    server.close()


def convodex(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real console script (``python -m convodex``: the same entry point)."""
    return subprocess.run(
        [sys.executable, "-m", "convodex", *args],
        capture_output=True,
        text=True,
        env=env if env is not None else dict(os.environ),
        timeout=120,
        check=False,
    )
