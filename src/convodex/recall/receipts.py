"""Receipts: one line per recall hook run in a local file, so a person can see what
reached the model and how often recall fired (SPEC L18). Never the prompt, never a
snippet: time, agent, session id, outcome, refs, bytes, milliseconds.

Each run appends one short line (O_APPEND: concurrent hooks never interleave); past
``MAX_BYTES`` the file is rewritten, atomically, to its newest ``KEEP`` lines.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

import msgspec

from convodex import config
from convodex.models import RecallReceipt

MAX_BYTES: Final = 1024 * 1024
KEEP: Final = 2000

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(RecallReceipt)


def record(receipt: RecallReceipt, path: Path | None = None) -> None:
    """Append one receipt; a receipt that cannot be written is dropped silently (the
    hook never fails because of its log)."""
    path = path or config.recall_log_path()
    line = _encoder.encode(receipt) + b"\n"
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > MAX_BYTES:
            _trim(path)


def _trim(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)[-KEEP:]
    spare = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    spare.write_bytes(b"".join(lines))
    os.chmod(spare, 0o600)
    os.replace(spare, path)


def read(path: Path | None = None, limit: int | None = None) -> list[RecallReceipt]:
    """The receipts, oldest first (the newest ``limit`` when given); bad lines skipped."""
    path = path or config.recall_log_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for line in raw.splitlines():
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            out.append(_decoder.decode(line))
    return out[-limit:] if limit else out
