"""Legacy 1.x DAG event log, schema 2 (SPEC L1.2): replayed, never rewritten.

One JSON record a line::

    {"type":"message","id":"m2","parent":"m1","head":"main","msgs":[{...}],"at":1767225600000}
    {"type":"patch","id":"m2","msgs":[{...}]}      new body for m2
    {"type":"redact","id":"m2"}                    m2 shows nothing (beats any patch)
    {"type":"system","head":"h","msgs":[{...}]}    the head's system message
    {"type":"fork","head":"h","parent":"m1"}       a new head whose leaf is m1
    {"type":"rewind","head":"main","parent":"m1"}  the head's leaf moves back to m1
    {"type":"select","head":"h"}   {"type":"retire","head":"h"}
    {"type":"rename","head":"h","title":"…"}

A message without a ``parent`` key continues its head's leaf (``"parent": null``
starts a root); without ``head`` it belongs to ``main``. Replay keeps only record
locations and the graph (counted against the DAG metadata budget), picks the
effective head, walks parents from its leaf (stopping at a missing node or a
cycle) and only then loads the selected bodies, by byte offset. Selecting another
head changes the transcript without changing its prefix: this format is not
append-only, so every change rebuilds the source.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import msgspec

from convodex.errors import SourceError
from convodex.sources import session_log
from convodex.sources.base import (
    Budget,
    ReadResult,
    SessionInfo,
    SourceFormat,
    SourceMessage,
    Support,
    load_message,
    messages_at,
)
from convodex.sources.jsonl import decoded_lines

NAME = "dag"
MAIN = "main"
KNOWN_TYPES = frozenset(
    {"message", "patch", "redact", "system", "fork", "rewind", "select", "retire", "rename"}
)
# Fixed overhead charged per graph node and per head on top of their encoded bytes.
NODE_OVERHEAD = 64
REDACTED_ROLE = "redacted"
TITLE_REPLAY_MAX_BYTES = 4 * 1024 * 1024


class _Meta(msgspec.Struct):
    """The structural fields of a record; ``msgs`` stays raw bytes (never decoded here)."""

    type: str | None = None
    id: str | None = None
    parent: str | None | msgspec.UnsetType = msgspec.UNSET
    head: str | None = None
    at: int | float | None = None
    title: str | None = None
    msgs: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


class _Body(msgspec.Struct):
    type: str | None = None
    at: int | float | None = None
    msgs: list[session_log._Record] | None = None


_decode_meta = msgspec.json.Decoder(_Meta).decode
_decode_body = msgspec.json.Decoder(_Body).decode


@dataclass(slots=True)
class _Head:
    leaf: str | None = None
    activity: tuple[float, int] = (-1.0, -1)
    system: tuple[int, int] | None = None  # span of the head's system record
    title: str | None = None


@dataclass(slots=True)
class Replay:
    """The graph of one log: node locations, heads, overlays; no message bodies."""

    nodes: dict[str, tuple[str | None, int, int]]  # id -> (parent, offset, length)
    heads: dict[str, _Head]
    patches: dict[str, tuple[int, int]]
    redactions: dict[str, tuple[int, int]]
    selected: str | None
    retired: set[str]

    def effective_head(self) -> str:
        """Last select unless retired; else the most active live head; else retired; main."""
        if self.selected is not None and self.selected not in self.retired:
            return self.selected
        live = [h for h in self.heads if h not in self.retired]
        for pool in (live, [h for h in self.heads if h in self.retired]):
            if pool:
                return max(pool, key=lambda h: self.heads[h].activity)
        return MAIN

    def chain(self, head: str) -> list[str]:
        """Node ids from the root to the head's leaf; stops at a missing node or a cycle."""
        out: list[str] = []
        seen: set[str] = set()
        node = self.heads[head].leaf if head in self.heads else None
        while node is not None and node in self.nodes and node not in seen:
            seen.add(node)
            out.append(node)
            node = self.nodes[node][0]
        out.reverse()
        return out

    def spans(self) -> tuple[tuple[int, int] | None, list[tuple[int, int]]]:
        """The head's system record span, and (offset, length) of every chain message."""
        head = self.effective_head()
        spans: list[tuple[int, int]] = []
        for node in self.chain(head):
            if node in self.redactions:
                spans.append(self.redactions[node])  # redaction beats patch
            elif node in self.patches:
                spans.append(self.patches[node])
            else:
                spans.append(self.nodes[node][1:])
        return (self.heads[head].system if head in self.heads else None), spans

    def title(self) -> str | None:
        head = self.effective_head()
        return self.heads[head].title if head in self.heads else None


def replay(path: Path, result: ReadResult, budget: Budget) -> Replay:
    """Pass one: the graph, from record locations and structural fields only."""
    nodes: dict[str, tuple[str | None, int, int]] = {}
    heads: dict[str, _Head] = {}
    patches: dict[str, tuple[int, int]] = {}
    redactions: dict[str, tuple[int, int]] = {}
    selected: str | None = None
    retired: set[str] = set()
    meta_bytes = 0

    def head_of(name: str | None, at: float, offset: int) -> _Head:
        nonlocal meta_bytes
        key = name or MAIN
        state = heads.get(key)
        if state is None:
            meta_bytes += len(key) + NODE_OVERHEAD
            state = heads[key] = _Head()
        state.activity = max(state.activity, (at, offset))
        return state

    for offset, length, _, rec in decoded_lines(path, result, budget, _decode_meta):
        if rec.type not in KNOWN_TYPES:
            raise SourceError(str(path), f"unknown DAG record type at byte {offset}")
        raw = len(rec.msgs)
        meta_bytes += length - raw
        budget.check(path, "dag_meta", meta_bytes)
        at = float(rec.at) if rec.at is not None else -1.0
        kind = rec.type
        if kind == "message" and rec.id is not None:
            if rec.id not in nodes:  # a duplicate message id is ignored
                state = head_of(rec.head, at, offset)
                parent = state.leaf if rec.parent is msgspec.UNSET else rec.parent
                nodes[rec.id] = (
                    parent if isinstance(parent, str) else None,
                    offset,
                    length,
                )
                state.leaf = rec.id
                meta_bytes += NODE_OVERHEAD
        elif kind == "patch" and rec.id is not None:
            patches[rec.id] = (offset, length)
        elif kind == "redact" and rec.id is not None:
            redactions[rec.id] = (offset, length)
        elif kind == "system":
            head_of(rec.head, at, offset).system = (offset, length)
        elif kind in ("fork", "rewind"):
            state = head_of(rec.head, at, offset)
            state.leaf = rec.parent if isinstance(rec.parent, str) else None
        elif kind == "select" and rec.head is not None:
            selected = rec.head if rec.head in heads else selected
            if rec.head in heads:
                head_of(rec.head, at, offset)
        elif kind == "retire" and rec.head is not None:
            retired.add(rec.head)
        elif kind == "rename":
            head_of(rec.head, at, offset).title = rec.title
        budget.check(path, "dag_meta", meta_bytes)
    return Replay(nodes, heads, patches, redactions, selected, retired)


class DagFormat(SourceFormat):
    """Reader for legacy DAG event logs; rebuilt on every change."""

    name = NAME
    support = Support(
        agent="convodex 1.x DAG log",
        versions="1.x",
        where="detected by content",
        branches="the selected head's chain",
        subagents="—",
    )
    resume: str | None = None
    append_only = False

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        budget.check(path, "log", os.stat(path).st_size)
        graph = replay(path, result, budget)
        system, spans = graph.spans()
        with open(path, "rb") as handle:
            if system is not None:
                # The head's system message replaces a leading system message, else leads.
                first = _message_at(handle, *spans[0], 0) if spans else None
                if first is not None and first.role == "system":
                    spans[0] = system
                else:
                    spans.insert(0, system)
            yield from messages_at(handle, spans, result, _message_at)

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        return load_message(path, offset, length, index, _message_at)

    def info(self, path: Path) -> SessionInfo:
        archived = any(part in session_log.ARCHIVE_DIR_NAMES for part in path.parent.parts[-2:])
        session_id = path.name.split(".", 1)[0]
        title = None
        try:
            # The title needs a replay: worth it for listing-sized logs only.
            if os.stat(path).st_size <= TITLE_REPLAY_MAX_BYTES:
                title = replay(path, ReadResult(0, 0), Budget.from_env()).title()
        except (OSError, SourceError):
            pass
        return SessionInfo(session_id=session_id, title=title, archived=archived)


def _message_at(handle: BinaryIO, offset: int, length: int, index: int) -> SourceMessage | None:
    """The displayed message of one record: a message, patch, system or redact record."""
    handle.seek(offset)
    raw = handle.read(length)
    if len(raw) != length:
        return None
    try:
        rec = _decode_body(raw.strip())
    except (msgspec.DecodeError, RecursionError):
        return None
    at = int(rec.at) if rec.at is not None else None
    if rec.type == "redact":
        return SourceMessage(index, offset, length, REDACTED_ROLE, at, [])
    if not rec.msgs or len(rec.msgs) != 1:
        return None
    body = rec.msgs[0]
    try:
        docs = session_log.documents_of(body, {})
    except session_log.RecordError:
        return None
    created = at if at is not None else session_log._created_at(body.createdAt)
    return SourceMessage(index, offset, length, body.role or "", created, docs or [])


FORMAT = DagFormat()
