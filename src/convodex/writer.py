"""The session writer for the native format (SPEC L1.1, L5).

Appends provider messages to ``<root>/<id>.jsonl`` under an advisory lock, then
updates the ``.jsonl.meta`` sidecar's ``revision``. Only after the write is
durable and the lock released does it send a non-blocking, path-coalesced hint
to this process's indexer.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from convodex.errors import InvalidInput
from convodex.hints import HintQueue, send_datagram

_ROLES = frozenset({"user", "assistant", "tool", "system"})
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class SessionWriter:
    """Writes convodex's own sessions; indexers learn about writes through ``hints``."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        hints: HintQueue | None = None,
        channel: Path | None = None,
    ) -> None:
        self.root = Path(root)
        self.hints = hints
        self.channel = channel  # a serving process's hint socket, if any

    def path_for(self, session_id: str) -> Path:
        if not _SESSION_ID.match(session_id) or session_id.endswith(".jsonl"):
            raise InvalidInput("session id must be 1-128 letters, digits, '.', '_' or '-'")
        return self.root / f"{session_id}.jsonl"

    def create(
        self,
        session_id: str | None = None,
        title: str | None = None,
        workspace_root: str | None = None,
    ) -> str:
        """Create an empty session with its sidecar; returns the session id."""
        session_id = session_id or uuid.uuid4().hex
        path = self.path_for(session_id)
        self.root.mkdir(parents=True, exist_ok=True)
        with self._locked(path):
            meta = self._read_meta(path)
            now = _now_ms()
            meta.setdefault("id", session_id)
            meta.setdefault("created_at", now)
            meta.setdefault("revision", 0)
            meta["updated_at"] = now
            if title is not None:
                meta["name"] = title
            if workspace_root is not None:
                meta["workspace_root"] = workspace_root
            self._write_meta(path, meta)
        return session_id

    def append(self, session_id: str, messages: Sequence[Mapping[str, Any]]) -> int:
        """Append messages in one write; returns the sidecar's new revision."""
        if not messages:
            raise InvalidInput("nothing to append")
        lines = []
        for message in messages:
            if not isinstance(message, Mapping) or message.get("role") not in _ROLES:
                raise InvalidInput("each message needs a role: user, assistant, tool or system")
            record = dict(message)
            record.setdefault("createdAt", _now_ms())
            lines.append(msgspec.json.encode(record) + b"\n")
        path = self.path_for(session_id)
        self.root.mkdir(parents=True, exist_ok=True)
        with self._locked(path) as handle:
            handle.seek(0, os.SEEK_END)
            end = handle.tell()
            if end:
                handle.seek(end - 1)
                if handle.read(1) != b"\n":
                    # A torn last line from a crashed writer: finish it so ours parse.
                    handle.write(b"\n")
            handle.write(b"".join(lines))
            handle.flush()
            os.fsync(handle.fileno())
            meta = self._read_meta(path)
            meta.setdefault("id", session_id)
            meta.setdefault("created_at", _now_ms())
            meta["revision"] = int(meta.get("revision") or 0) + 1
            meta["updated_at"] = _now_ms()
            meta.pop("content_digest", None)  # no longer describes the bytes
            self._write_meta(path, meta)
            revision = int(meta["revision"])
        # After commit and unlock; neither call blocks or fails the write.
        if self.hints is not None:
            self.hints.send(path)
        if self.channel is not None:
            send_datagram(self.channel, path)
        return revision

    @contextlib.contextmanager
    def _locked(self, path: Path) -> Iterator[Any]:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        with os.fdopen(fd, "r+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield handle
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    @staticmethod
    def _read_meta(path: Path) -> dict[str, Any]:
        try:
            data = msgspec.json.decode(path.with_name(path.name + ".meta").read_bytes())
        except (OSError, msgspec.DecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    @staticmethod
    def _write_meta(path: Path, meta: dict[str, Any]) -> None:
        target = path.with_name(path.name + ".meta")
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(msgspec.json.encode(meta))
        os.replace(tmp, target)
