"""Per-session checkpoints of ``convodex sync``: what was last stored on the hub.

An append-only JSON-lines file per hub and account (under convodex's data dir): one
line is written and flushed after each session the hub confirmed, so a run killed at
any point resumes with every finished session skipped and the unfinished one sent
again from its start (the hub resets it: no duplicates). A torn last line is
ignored. Each run ends by rewriting the file compactly (atomic replace).

One run at a time per file: a run holds an exclusive lock on ``<file>.lock`` (``serve``
syncing in the background and a ``convodex sync`` by hand never interleave).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from convodex import config
from convodex.errors import ConvodexError


@dataclass(frozen=True)
class Checkpoint:
    """One session as the hub last confirmed it."""

    agent: str
    session_id: str
    path: str
    #: what the file looked like: size, mtime (ns) — unchanged means nothing to read
    stamp: str
    digest: str
    #: the hub deleted it (here, or refused a stale copy): never sent again
    deleted: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return self.agent, self.session_id


def state_path(url: str, token: str) -> Path:
    """The checkpoint file of one hub URL and account (by a hash, never the token)."""
    digest = hashlib.sha256(f"{url}\x00{token}".encode()).hexdigest()[:24]
    return config.data_home() / "hub" / f"sync-{digest}.jsonl"


class SyncBusy(ConvodexError):
    """Another sync of the same hub and account is running on this machine."""

    status = 409


class SyncState:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: dict[tuple[str, str], Checkpoint] = {}
        self._out: IO[str] | None = None
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SyncBusy("another sync of this hub is running on this machine") from None
        self._lock_fd: int | None = fd
        self._load()

    def _load(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return
        for line in lines:
            try:
                point = Checkpoint(**json.loads(line))
            except (ValueError, TypeError):
                continue  # a line torn by a kill
            self.done[point.key] = point

    def record(self, point: Checkpoint) -> None:
        """Remember one confirmed session before the next is sent. The line is flushed
        to the kernel (a killed process loses nothing) but not synced to the disk: a
        line lost to a power cut only sends that session again, which the hub answers
        ``unchanged`` (its digest is stored), so a sync per line bought nothing."""
        self.done[point.key] = point
        if self._out is None:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._out = open(self.path, "a", encoding="utf-8")
            os.chmod(self.path, 0o600)
        self._out.write(json.dumps(asdict(point), ensure_ascii=False) + "\n")
        self._out.flush()

    def compact(self) -> None:
        """Rewrite the file with one line per session (atomic replace)."""
        self.close()
        if not self.done and not self.path.exists():
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            for point in self.done.values():
                out.write(json.dumps(asdict(point), ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

    def release(self) -> None:
        """End the run: the file is closed and the lock let go."""
        self.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
