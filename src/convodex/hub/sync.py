"""``convodex sync``: push this machine's local sessions into a hub (SPEC S6, X11).

Each local session (its effective branch, as ``convodex show`` reads it) becomes one hub
session keyed by (machine, agent, session id), with its title, project, agent and
message times; a fork or sub-agent session names the hub copy of the session it came
from (``forkedFrom``), when that one is shared too. A session is read only when its
transcript changed since the last confirmed upload, and sent only when what would be
sent changed (a digest of it): a second run sends nothing. Likely secrets are masked
before anything leaves the machine (``[hub] redact``, on by default) by the library's
redaction, the same as ``export --redact``; home directories in the project path become
``~``. Sessions whose transcript is gone are deleted on the hub, and the hub keeps them
deleted.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convodex.errors import ConvodexError
from convodex.hub.client import HubClient
from convodex.hub.settings import HubSettings
from convodex.hub.state import Checkpoint, SyncState, state_path
from convodex.models import SessionBranch, SessionDocument, SessionEntry, TreeRow, encode
from convodex.team_models import SyncItem, SyncReport

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService

#: the most payload bytes one upload request carries (the hub accepts 16 MiB in all;
#: the rest is room for the session's facts and the JSON around the entries)
PART_BYTES = 12 * 1024 * 1024
#: sessions in flight at once: while the hub stores one, this machine reads and
#: redacts the next (each upload thread has its own connection)
UPLOADS = 3


def _part(kind: str, text: str, tool: str | None) -> dict[str, Any]:
    """One content part in the provider message shape the hub's projection reads:
    text is shown; tool input and output are kept but never shown."""
    if kind in ("user_text", "assistant_text"):
        return {"type": "text", "text": text}
    if kind == "tool_input":
        return {"type": "toolCall", "name": tool or "", "arguments": {"input": text}}
    return {
        "type": "toolResult",
        "name": tool or "",
        "output": text,
        "isError": kind == "tool_error",
    }


def _payload(entry: SessionEntry) -> dict[str, Any]:
    return {
        "role": entry.role,
        "content": [_part(p.kind, p.text, p.tool_name) for p in entry.parts],
    }


def home_relative(path: str | None) -> str:
    """``path`` with this user's home directory as ``~`` (X11: no user names leave)."""
    if not path:
        return ""
    home = str(Path.home())
    if path == home or path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path


def upload_entries(
    document: SessionDocument, branches: list[SessionBranch] | None = None
) -> list[dict[str, Any]]:
    """The document's messages as hub entries, each with a time (microseconds): its
    own, else the one before it, else the session's start. The effective branch comes
    first; each abandoned branch follows, its first entry naming the entry it
    continues (``parent``: its place in the upload; 0: none)."""
    fallback = (document.started_at or document.ended_at or int(time.time() * 1000)) * 1000
    out: list[dict[str, Any]] = []
    place: dict[int, int] = {}  # message index -> its place in the upload (from 1)

    def add(entry: SessionEntry, parent: int | None, stamp: int) -> int:
        if entry.created_at is not None:
            stamp = entry.created_at * 1000
        item: dict[str, Any] = {"payload": _payload(entry), "createdAt": stamp}
        if parent is not None:
            item["parent"] = parent
        out.append(item)
        place[entry.message_index] = len(out)
        return stamp

    for entry in document.messages:
        fallback = add(entry, None, fallback)
    if not out:
        return out
    for branch in branches or ():
        if branch.after is not None and branch.after not in place:
            continue
        parent: int | None = 0 if branch.after is None else place[branch.after]
        stamp = fallback if branch.after is None else out[place[branch.after] - 1]["createdAt"]
        for entry in branch.messages:
            stamp = add(entry, parent, stamp)
            parent = None
    return out


def parts(encoded: list[bytes]) -> Iterator[list[bytes]]:
    """Encoded entries in groups of at most ``PART_BYTES`` (at least one entry each)."""
    group: list[bytes] = []
    size = 0
    for entry in encoded:
        if group and size + len(entry) > PART_BYTES:
            yield group
            group, size = [], 0
        group.append(entry)
        size += len(entry)
    yield group


def with_entries(head: dict[str, Any], encoded: list[bytes]) -> bytes:
    """``encode({**head, "entries": [...]})`` from entries already encoded: the same
    bytes (msgspec keeps a dict's order), each entry encoded once per run."""
    return encode(head)[:-1] + b',"entries":[' + b",".join(encoded) + b"]}"


def _stamp(row: TreeRow) -> str:
    st = os.stat(row.session_path)
    return f"{st.st_size}:{st.st_mtime_ns}:{row.message_count}:{row.last_activity_at}"


class Syncer:
    """One sync run: the local listing against the checkpoints, then the hub."""

    def __init__(
        self,
        service: HistoryService,
        settings: HubSettings,
        *,
        dry_run: bool = False,
        on_item: Callable[[SyncItem], None] | None = None,
        uploads: int = UPLOADS,
        stop: threading.Event | None = None,
    ) -> None:
        self.service = service
        self.settings = settings
        self.dry_run = dry_run
        self.uploads = max(1, uploads)
        #: set: no further session is started (the ones in flight end)
        self.stop = stop or threading.Event()
        self.state = SyncState(state_path(settings.url, settings.token))
        self.items: list[SyncItem] = []
        self.on_item = on_item
        self.bytes_sent = 0
        self._lock = threading.Lock()
        self._catalog_lock = threading.Lock()
        self._local = threading.local()
        self._clients: list[HubClient] = []
        #: the (agent, session id) of every local session this run may share
        self._shared: set[tuple[str, str]] = set()

    @property
    def client(self) -> HubClient:
        """This thread's connection to the hub."""
        client: HubClient | None = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = HubClient(self.settings.url, self.settings.token)
            with self._lock:
                self._clients.append(client)
        return client

    def _note(self, row_agent: str, session_id: str, action: str, size: int = 0) -> None:
        item = SyncItem(agent=row_agent, session_id=session_id, action=action, bytes=size)
        with self._lock:
            self.items.append(item)
            if self.on_item is not None:
                self.on_item(item)

    def _record(self, point: Checkpoint, size: int = 0) -> None:
        with self._lock:
            self.state.record(point)
            self.bytes_sent += size

    def run(self) -> SyncReport:
        started = time.perf_counter()
        try:
            rows = self.service.tree().rows
            seen = {(row.source_format, row.session_id) for row in rows}
            self._shared = {
                (row.source_format, row.session_id)
                for row in rows
                if self.settings.shares(row.workspace_root, row.session_path)
            }
            self._sessions(rows)
            self._deletions(seen)
        finally:
            if not self.dry_run:
                self.state.compact()
            self.state.release()
            for client in self._clients:
                client.close()
        count = {a: sum(1 for i in self.items if i.action == a) for a in _ACTIONS}
        return SyncReport(
            hub=self.settings.url,
            machine=self.settings.machine,
            dry_run=self.dry_run,
            sent=count["send"],
            unchanged=count["unchanged"],
            deleted=count["delete"],
            refused=count["deleted-on-hub"],
            excluded=count["excluded"],
            failed=count["failed"],
            bytes_sent=self.bytes_sent,
            seconds=round(time.perf_counter() - started, 3),
            sessions=self.items,
        )

    def _sessions(self, rows: list[TreeRow]) -> None:
        """Every row, ``uploads`` at a time; the first error (the hub refused, or cannot
        be reached) stops the run once the uploads in flight have ended."""
        if self.uploads == 1 or len(rows) < 2:
            for row in rows:
                self._session(row)
            return
        pool = ThreadPoolExecutor(self.uploads, thread_name_prefix="convodex-sync")
        try:
            futures = [pool.submit(self._session, row) for row in rows]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            for future in done:
                future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _session(self, row: TreeRow) -> None:
        if self.stop.is_set():
            return
        agent, sid = row.source_format, row.session_id
        if not self.settings.shares(row.workspace_root, row.session_path):
            self._note(agent, sid, "excluded")
            return
        known = self.state.done.get((agent, sid))
        if known is not None and known.deleted:
            self._note(agent, sid, "deleted-on-hub")
            return
        try:
            stamp = _stamp(row)
            if known is not None and known.stamp == stamp:
                self._note(agent, sid, "unchanged")
                return
            branches: list[SessionBranch] = []
            document = self._document(row, branches)
        except (OSError, ConvodexError):
            self._note(agent, sid, "failed")
            return
        entries = upload_entries(document, branches)
        facts: dict[str, Any] = {
            "machine": self.settings.machine,
            "agent": agent,
            "sessionId": sid,
            "title": document.title or "",
            "project": home_relative(document.project),
            "team": self.settings.team,
        }
        if row.parent_id and (agent, row.parent_id) in self._shared:
            # A fork or sub-agent session names the one it came from (its hub copy),
            # never one this machine keeps to itself.
            facts["forkedFrom"] = row.parent_id
        if len(entries) > len(document.messages):
            # Abandoned branches follow the effective one, which ends at its last entry.
            facts["head"] = len(document.messages)
        encoded = [encode(entry) for entry in entries]
        body = with_entries(facts, encoded)
        digest = hashlib.sha256(body).hexdigest()
        point = Checkpoint(agent, sid, row.session_path, stamp, digest)
        if known is not None and known.digest == digest:
            if not self.dry_run:
                self._record(point)
            self._note(agent, sid, "unchanged")
            return
        if self.dry_run:
            self._note(agent, sid, "send", len(body))
            return
        groups = list(parts(encoded))
        answer: Any = None
        for n, group in enumerate(groups):
            final = n == len(groups) - 1
            head = {**facts, "digest": digest, "part": n, "final": final}
            answer = self.client.request("POST", "/brain/sync/sessions", with_entries(head, group))
            if isinstance(answer, dict) and answer.get("state") in ("deleted", "unchanged"):
                break
        state = answer.get("state") if isinstance(answer, dict) else None
        if state == "deleted":
            self._record(Checkpoint(agent, sid, row.session_path, stamp, digest, True))
            self._note(agent, sid, "deleted-on-hub")
            return
        self._record(point, len(body))
        self._note(agent, sid, "send" if state == "stored" else "unchanged", len(body))

    def _document(self, row: TreeRow, branches: list[SessionBranch]) -> SessionDocument:
        """The row's document; ``branches`` receives its abandoned branches (both
        redacted when the settings ask)."""
        from convodex.catalog.transcript import read_document, redact_branches, redact_document

        # One catalog connection serves every upload thread in the foreground, and
        # sqlite3's statement cache is not safe to share: one lookup at a time.
        with self._catalog_lock:
            try:
                ref = self.service.resolve(row.session_id)
            except ConvodexError:
                ref = self.service.resolve(row.session_path)
            if ref.session_path != row.session_path:
                ref = self.service.resolve(row.session_path)
        found: list[SessionBranch] = []
        # Not ``service.document``: a sync is no person waiting, so background indexing
        # need not hold for it.
        document = read_document(ref, branches=found)
        if not self.settings.redact:
            branches.extend(found)
            return document
        branches.extend(redact_branches(found))
        return redact_document(document)

    def _deletions(self, seen: set[tuple[str, str]]) -> None:
        for point in list(self.state.done.values()):
            if self.stop.is_set():
                return
            if point.deleted or point.key in seen or Path(point.path).exists():
                continue
            if not self.dry_run:
                self.client.request(
                    "POST",
                    "/brain/sync/deletions",
                    {
                        "machine": self.settings.machine,
                        "agent": point.agent,
                        "sessionId": point.session_id,
                    },
                )
                self.state.record(
                    Checkpoint(point.agent, point.session_id, point.path, "", "", True)
                )
            self._note(point.agent, point.session_id, "delete")


_ACTIONS = ("send", "unchanged", "delete", "deleted-on-hub", "excluded", "failed")
