"""One frame each way: a count of fields, then each field's length and bytes.

Binary-safe and standard library only (no json, no msgspec on the client's side):
the request names its kind and carries the client's identity; the answer starts
with a status (``ok``, ``no``: run it yourself).
"""

from __future__ import annotations

import _socket

MAGIC = b"CVDX"
MAX_FRAME = 256 * 1024 * 1024  # a page of hits or a whole session, never more


def encode(fields: list[bytes]) -> bytes:
    parts = [MAGIC, len(fields).to_bytes(4, "big")]
    for field in fields:
        parts.append(len(field).to_bytes(4, "big"))
        parts.append(field)
    return b"".join(parts)


def _exactly(sock: _socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("the other end closed the connection")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def receive(sock: _socket.socket) -> list[bytes]:
    """One frame's fields; ConnectionError on a short or malformed frame."""
    if _exactly(sock, 4) != MAGIC:
        raise ConnectionError("not a convodex frame")
    count = int.from_bytes(_exactly(sock, 4), "big")
    fields: list[bytes] = []
    total = 0
    for _ in range(count):
        size = int.from_bytes(_exactly(sock, 4), "big")
        total += size
        if total > MAX_FRAME:
            raise ConnectionError("frame too large")
        fields.append(_exactly(sock, size))
    return fields
