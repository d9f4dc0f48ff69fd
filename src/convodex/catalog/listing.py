"""The session tree and its summary cache (SPEC L10).

Rows are the sessions the catalog knows, as search groups them: a source's own, and
each session a file of many holds (an Aider history's runs, a chat export's
conversations: the messages that name their own session), with its own title, dates
and count. A row's summary (title, counts, activity, workspace, and the sessions a
file holds) comes from a cache, format 3, whose entries each carry the source's
manifest identity (device, inode, size, mtime) and log signature (hashes of the
head and of the bytes before the indexed offset); a mismatch, or any other cache
format, is ignored and rebuilt. The progressive tree never replays a transcript in
the request: rows whose summary is not cheap to know are reported pending. A failed
cache write keeps the summaries in memory and retries with exponential backoff.
Losing the cache loses nothing but time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

import msgspec

from convodex.catalog.db import Catalog
from convodex.catalog.hits import first_user_title, title_from
from convodex.catalog.search import RuntimeState
from convodex.catalog.stamps import signature
from convodex.models import Tree, TreeRow
from convodex.sources.base import Budget, ReadResult, SourceMessage, open_source
from convodex.sources.discover import FORMATS
from convodex.text.titles import has_user_text, own_title

CACHE_FORMAT = 3
HEAD_BYTES = 4096
MAX_BACKOFF = 60.0


@dataclass(slots=True)
class Part:
    """A session inside a file of many: what its own messages say."""

    sessionId: str
    title: str | None
    messageCount: int
    firstActivityAt: int | None
    lastActivityAt: int | None
    subagent: bool


@dataclass(slots=True)
class Summary:
    title: str | None
    workspaceRoot: str | None
    messageCount: int
    firstActivityAt: int | None
    lastActivityAt: int | None
    parentId: str | None = None
    # The sessions of their own its messages name (a file of many), first seen first.
    parts: list[Part] = field(default_factory=list)

    @classmethod
    def of(cls, data: dict[str, Any]) -> Summary:
        parts = [Part(**part) for part in data.pop("parts", ())]
        return cls(**data, parts=parts)


@dataclass(frozen=True, slots=True)
class Identity:
    """What must not change for a cached summary to stay valid."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    head: str
    prefix: str

    @classmethod
    def of(cls, path: str) -> Identity:
        st = os.stat(path)
        with open_source(path) as handle:  # never blocks on a FIFO
            head = hashlib.blake2b(handle.read(HEAD_BYTES), digest_size=12).hexdigest()
        return cls(
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
            head,
            signature(path, st.st_size).hex(),
        )


def summarize(path: str, fmt: str) -> Summary:
    """Replay one source for its summary: the expensive path, kept off requests."""
    reader = FORMATS[fmt]
    info = reader.info(Path(path))
    result = ReadResult(0, 0)
    first: int | None = None
    last: int | None = None
    title = own_title(info.title)
    parts: dict[str, Part] = {}
    for message in reader.read(Path(path), result, Budget.from_env()):
        at = message.created_at
        if at is not None:
            first = at if first is None else min(first, at)
            last = at if last is None else max(last, at)
        key = message.session_id
        if key is not None and key != info.session_id:
            _count(parts, key, message)
        if title is None and has_user_text(message.documents):
            title = title_from(message)  # no title of its own: its first user message (L14)
    return Summary(
        title,
        info.workspace_root,
        result.next_index,
        first or info.created_at,
        last or info.updated_at,
        info.parent_id,
        list(parts.values()),
    )


def _count(parts: dict[str, Part], key: str, message: SourceMessage) -> None:
    """One more message of a session inside a file of many; its first names its title,
    as a search hit's does."""
    part = parts.get(key)
    if part is None:
        part = parts[key] = Part(key, own_title(message.title), 0, None, None, False)
    part.messageCount += 1
    part.subagent = part.subagent or message.subagent
    at = message.created_at
    if at is not None:
        part.firstActivityAt = at if part.firstActivityAt is None else min(part.firstActivityAt, at)
        part.lastActivityAt = at if part.lastActivityAt is None else max(part.lastActivityAt, at)


def _native_summary(
    catalog: Catalog, source_id: int, path: str, count: int, last: int | None
) -> Summary:
    info = FORMATS["session_log"].info(Path(path))
    title = own_title(info.title) or first_user_title(catalog, source_id)
    return Summary(title, info.workspace_root, count, info.created_at, last, info.parent_id)


class SummaryCache:
    """Summaries by source path, persisted as JSON beside the catalog."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, tuple[Identity, Summary]] = {}
        self.failed: set[str] = set()
        self.verified: set[str] = set()
        self.dirty = False
        self.write_failures = 0
        self.next_write = 0.0
        self.lock = threading.Lock()
        self._load()

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            data = msgspec.json.decode(self.path.read_bytes())
        except (OSError, msgspec.DecodeError):
            return
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
            return  # another format: ignored, rebuilt as sources are summarized
        for key, entry in (data.get("entries") or {}).items():
            with contextlib.suppress(TypeError, KeyError, ValueError, AttributeError):
                self.entries[key] = (Identity(**entry["identity"]), Summary.of(entry["summary"]))

    def get(self, path: str) -> Summary | None:
        """A cached summary, only while the source's identity and signature still match."""
        with self.lock:
            entry = self.entries.get(path)
        if entry is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        cached, summary = entry
        if (cached.device, cached.inode, cached.size, cached.mtime_ns) != (
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
        ):
            return None
        if path not in self.verified:  # first use in this process: check the log signature
            try:
                if Identity.of(path) != cached:
                    return None
            except OSError:
                return None
            self.verified.add(path)
        return summary

    def put(self, path: str, identity: Identity, summary: Summary) -> None:
        with self.lock:
            self.entries[path] = (identity, summary)
            self.verified.add(path)
            self.failed.discard(path)
            self.dirty = True

    def flush(self, now: float | None = None) -> bool:
        """Persist if dirty; a failure keeps memory and backs off exponentially."""
        now = time.monotonic() if now is None else now
        if self.path is None or not self.dirty or now < self.next_write:
            return False
        with self.lock:
            payload = {
                "format": CACHE_FORMAT,
                "entries": {
                    key: {"identity": asdict(ident), "summary": asdict(summary)}
                    for key, (ident, summary) in self.entries.items()
                },
            }
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(msgspec.json.encode(payload))
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except OSError:
            self.write_failures += 1
            self.next_write = now + min(MAX_BACKOFF, 0.5 * 2**self.write_failures)
            with contextlib.suppress(OSError):
                tmp.unlink()
            return False
        self.dirty = False
        self.write_failures = 0
        self.next_write = 0.0
        return True


class Listing:
    """The session tree over one catalog, with the shared summary resolver."""

    def __init__(self, cache: SummaryCache) -> None:
        self.cache = cache
        self.revision = 0

    def resolve(self, path: str, fmt: str) -> Summary | None:
        """The shared resolver for the complete tree: the cache, else a replay."""
        return self.cache.get(path) or self._store(path, lambda: summarize(path, fmt))

    def refresh(
        self,
        catalog: Catalog,
        limit: int | None = 256,
        go_on: Callable[[], bool] | None = None,
    ) -> int:
        """Background work: summarize indexed sources whose summary is missing or stale
        (at most ``limit``; None: all, once indexing is done, so no row stays loading),
        until ``go_on`` says to stop (the scheduler's stop: the next refresh goes on)."""
        done = 0
        rows = catalog.db.execute(
            "SELECT id, path, format, inode, size, mtime_ns, message_count, last_activity_at "
            "FROM sources WHERE pending = 0 AND health IN ('ok', 'stale') ORDER BY id"
        ).fetchall()
        for source_id, path, fmt, inode, size, mtime_ns, count, last in rows:
            if (limit is not None and done >= limit) or (go_on is not None and not go_on()):
                break
            if self._current(path, inode, size, mtime_ns) is not None or path in self.cache.failed:
                continue
            if fmt == "session_log":
                # Native and indexed: the checkpoint and the sidecar are enough.
                summary = partial(_native_summary, catalog, source_id, path, count, last)
                self._store(path, summary)
            else:
                self._store(path, partial(summarize, path, fmt))
            done += 1
        self.cache.flush()
        return done

    def _store(self, path: str, build: Callable[[], Summary]) -> Summary | None:
        """Summarize one source into the cache; any failure marks its metadata failed."""
        try:
            identity = Identity.of(path)
            summary = build()
        except Exception:
            with self.cache.lock:
                self.cache.failed.add(path)
            return None
        self.cache.put(path, identity, summary)
        self.revision += 1
        return summary

    def _current(
        self, path: str, inode: int | None, size: int | None, mtime_ns: int | None
    ) -> Summary | None:
        """A cached summary that matches the catalog's checkpoint: no file is touched."""
        with self.cache.lock:
            entry = self.cache.entries.get(path)
        if entry is None:
            return None
        ident, summary = entry
        if (ident.inode, ident.size, ident.mtime_ns) != (inode, size, mtime_ns):
            return None
        return summary

    def tree(
        self,
        catalog: Catalog,
        runtime: RuntimeState,
        progressive: bool,
        retry_failed: bool = False,
    ) -> Tree:
        """The session tree. Progressive: cached summaries only, answered at once."""
        if retry_failed:
            with self.cache.lock:
                self.cache.failed.clear()
        found = []
        pending = failed = 0
        for row in catalog.db.execute(
            "SELECT path, format, session_id, subagent, health, pending, inode, size, mtime_ns "
            "FROM sources ORDER BY id"
        ):
            path, fmt, session_id, subagent, health, is_pending, inode, size, mtime_ns = row
            summary = None if is_pending else self._current(path, inode, size, mtime_ns)
            if summary is None and not progressive:
                summary = self.resolve(path, fmt)
            if summary is None:
                # A source that failed indexing has no summary to wait for: unreadable.
                if path in self.cache.failed or (health == "failed" and not is_pending):
                    failed += 1
                else:
                    pending += 1
            found.append((path, fmt, session_id, bool(subagent), health, summary))
        rows = _rows(found, runtime)
        if not progressive:
            self.cache.flush()
        scanned = catalog.db.execute(
            "SELECT count(*) FROM roots WHERE completed_generation > 0"
        ).fetchone()[0]
        state: Literal["scanning", "partial", "complete"]
        if not scanned:
            state = "scanning"
        elif pending or failed:
            state = "partial"
        else:
            state = "complete"
        return Tree(
            rows=rows,
            listing_state=state,
            listing_revision=self.revision,
            counts_complete=pending == 0 and failed == 0,
            pending_metadata=pending,
            failed_metadata=failed,
        )


def _rows(
    found: list[tuple[str, str, str, bool, str, Summary | None]], runtime: RuntimeState
) -> list[TreeRow]:
    """A row a session: each source's own, then the sessions of a file of many. A
    session that is another source's own (a resumed Claude Code file carries the
    earlier session's records) is that source's row; one in several files is listed
    once, by its newest file: the sessions ``recent`` lists, and a ref resolves."""
    owners = {session_id for _, _, session_id, _, _, _ in found}
    newest: dict[str, tuple[int, int]] = {}
    for n, (_, _, _, _, _, summary) in enumerate(found):
        for part in summary.parts if summary else ():
            last = part.lastActivityAt or (summary.lastActivityAt if summary else None)
            place = (-(last or 0), n)
            if part.sessionId not in owners and place < newest.get(part.sessionId, (1, 0)):
                newest[part.sessionId] = place
    rows = []
    for n, (path, fmt, session_id, subagent, health, summary) in enumerate(found):
        parts = [p for p in summary.parts if p.sessionId not in owners] if summary else []
        own = summary.messageCount - sum(p.messageCount for p in parts) if summary else None
        if not parts or (own or 0) > 0:
            row = _row(session_id, path, fmt, subagent, health, summary, runtime)
            row.message_count = own
            rows.append(row)
        for part in parts:
            if summary is None or newest[part.sessionId][1] != n:
                continue
            row = _row(part.sessionId, path, fmt, subagent or part.subagent, health, None, runtime)
            row.title, row.workspace_root = part.title, summary.workspaceRoot
            row.message_count = part.messageCount
            row.first_activity_at = part.firstActivityAt or summary.lastActivityAt
            row.last_activity_at = part.lastActivityAt or summary.lastActivityAt
            row.parent_id = session_id if row.subagent and (own or 0) > 0 else None
            rows.append(row)
    return rows


def _row(
    session_id: str,
    path: str,
    fmt: str,
    subagent: bool,
    health: str,
    summary: Summary | None,
    runtime: RuntimeState,
) -> TreeRow:
    return TreeRow(
        session_id=session_id,
        session_path=path,
        source_format=fmt,
        title=summary.title if summary else None,
        workspace_root=summary.workspaceRoot if summary else None,
        message_count=summary.messageCount if summary else None,
        first_activity_at=summary.firstActivityAt if summary else None,
        last_activity_at=summary.lastActivityAt if summary else None,
        subagent=subagent,
        parent_id=summary.parentId if summary else None,
        health=health,
        open=session_id in runtime.open,
        running=session_id in runtime.running,
        current=session_id == runtime.current,
    )
