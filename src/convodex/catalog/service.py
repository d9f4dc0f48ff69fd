"""The local history service: the one façade every surface calls (CLI, HTTP, MCP, picker).

It owns the catalog connections, the background scheduler and its helpers (watcher,
hint socket, listing refresh) and the runtime overlay, and answers in result models.
No surface talks SQL or opens a catalog itself. Two lifetimes:

- foreground (``HistoryService.open``): one connection; ``index`` runs in the
  caller's thread (the CLI);
- background (``start``): a scheduler thread keeps the catalog current while reads
  use one connection per worker thread, so reads never queue behind index writes.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from convodex import config
from convodex.catalog.db import Catalog, connect, open_catalog
from convodex.catalog.plan import SearchRequest
from convodex.catalog.refs import SessionRef
from convodex.catalog.search import RuntimeState, Searcher, progress, root_ids_for
from convodex.errors import NotFound, QueryError
from convodex.models import (
    AroundResult,
    Event,
    IndexStats,
    Progress,
    SearchPage,
    SessionDocument,
    SessionMessage,
    SessionView,
    Tree,
)

if TYPE_CHECKING:
    from convodex.catalog.indexer import Progress as IndexProgress
    from convodex.catalog.listing import Listing
    from convodex.catalog.scheduler import Scheduler
    from convodex.catalog.workers import SearchPool
    from convodex.hints import HintChannel, HintQueue
    from convodex.sources.base import Budget

# A rebuild refreshes listing summaries at most this often (the tree's own progress).
LISTING_REFRESH_SECONDS = 1.0


@dataclass(frozen=True)
class Background:
    """How ``start`` keeps the catalog current."""

    rescan_seconds: float = 60.0
    hints: HintQueue | None = None  # shared with an in-process session writer
    budget: Budget | None = None
    listen_for_hints: bool = True  # other processes' writers, over a local socket
    # Worker processes that run searches (0: searches run in the calling thread).
    search_workers: int = 0


class HistoryService:
    """Catalog, scheduler and runtime state of one process, behind read and write calls."""

    def __init__(
        self,
        catalog: Catalog,
        roots: list[Path],
        *,
        cache_dir: Path | None = None,
        scope: list[Path] | None = None,
        background: Background | None = None,
    ) -> None:
        self.catalog = catalog  # the owner connection: indexing writes here
        self.roots = roots
        self.cache_dir = cache_dir
        # Searches see only these roots' sources (None: the whole catalog).
        self.scope = scope
        self.background = background or Background()
        self.runtime = RuntimeState()
        self.scheduler: Scheduler | None = None
        self.pool: SearchPool | None = None
        self.listing: Listing | None = None
        self.channel: HintChannel | None = None
        self.watching = threading.Event()  # set once the file watcher is running
        self._watcher: threading.Thread | None = None
        self._stop_watching = threading.Event()
        self._local = threading.local()
        self._readers: list[Catalog] = []
        self._readers_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        cache_dir: Path | None,
        roots: list[Path],
        *,
        scoped: bool = False,
        background: Background | None = None,
    ) -> HistoryService:
        """Open the catalog under ``cache_dir`` by the open policy (L8).

        ``scoped``: searches see only ``roots``; ``background``: how ``start`` works.
        """
        catalog = open_catalog(cache_dir)
        scope = roots if scoped else None
        return cls(catalog, roots, cache_dir=cache_dir, scope=scope, background=background)

    def __enter__(self) -> HistoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads ------------------------------------------------------------------------

    def reader(self) -> Catalog:
        """The calling thread's read connection (the owner's until background starts)."""
        if self.scheduler is None or self.catalog.path is None:
            return self.catalog  # foreground, or an in-memory catalog (one connection)
        catalog: Catalog | None = getattr(self._local, "catalog", None)
        if catalog is None:
            owner = self.catalog
            # Already opened (and migrated) by the owner: a plain connection suffices,
            # read-only when the catalog is degraded.
            degraded = owner.mode == "degraded"
            catalog = Catalog(connect(str(owner.path), read_only=degraded), owner.path, owner.mode)
            self._local.catalog = catalog
            with self._readers_lock:
                self._readers.append(catalog)
        return catalog

    def searcher(self) -> Searcher:
        return Searcher(self.reader(), self.runtime)

    def search(self, request: SearchRequest) -> SearchPage:
        """One page of hits; never waits for indexing (progress says how far it is)."""
        if self.scope is not None and request.roots is None:
            request = request.with_roots(self.scope)
        with self.interactive() if request.around else contextlib.nullcontext():
            if self.pool is None:
                return self.searcher().search(request)
            page = self.pool.search(request)
        runtime = self.runtime  # the overlay lives in this process, not in the workers
        for hit in page.hits:
            hit.open = hit.session_id in runtime.open
            hit.running = hit.session_id in runtime.running
            hit.current = hit.session_id == runtime.current
        return page

    def progress(self) -> Progress:
        catalog = self.reader()
        return progress(catalog, root_ids_for(catalog, self.scope))

    def find_source(self, session_id: str | None, path: str | None) -> tuple[str, str]:
        """(path, format) of a session by id (its newest source) or by transcript path.

        A scoped service finds only sessions under its roots.
        """
        catalog = self.reader()
        where: list[str] = []
        params: list[str | int] = []
        if path:
            where.append("path = ?")
            params.append(path)
        if session_id:
            where.append("session_id = ?")
            params.append(session_id)
        if not where:
            raise QueryError("a session id or path is required")
        root_ids = root_ids_for(catalog, self.scope)
        if root_ids is not None:
            where.append(f"root_id IN ({', '.join('?' for _ in root_ids)})")
            params.extend(root_ids)
        row = catalog.db.execute(
            f"SELECT path, format FROM sources WHERE {' AND '.join(where)} "
            "ORDER BY last_activity_at DESC LIMIT 1",
            params,
        ).fetchone()
        if row is None:
            raise NotFound("unknown session")
        return str(row[0]), str(row[1])

    def around(
        self,
        message_index: int,
        *,
        session_id: str | None = None,
        path: str | None = None,
        before: int = 3,
        after: int = 3,
    ) -> AroundResult:
        """The messages around one message of a session, read from its source."""
        with self.interactive():
            found, _ = self.find_source(session_id, path)
            messages = self.searcher().around(found, message_index, before, after)
        return AroundResult(
            session_id=session_id or self._session_id(found),
            session_path=found,
            messages=messages,
        )

    def session(self, session_id: str, path: str | None = None) -> SessionView:
        """A whole session's effective branch, replayed from its transcript."""
        from convodex.sessions.resume import resume_command
        from convodex.sources.base import Budget, ReadResult
        from convodex.sources.registry import FORMATS

        with self.interactive():
            found, fmt = self.find_source(session_id, path)
            reader = FORMATS[fmt]
            info = reader.info(Path(found))
            messages = [
                SessionMessage(message_index=m.index, role=m.role, text=m.text())
                for m in reader.read(Path(found), ReadResult(0, 0), Budget.from_env())
            ]
        return SessionView(
            session_id=session_id,
            session_path=found,
            title=info.title,
            workspace_root=info.workspace_root,
            messages=messages,
            agent=fmt,
            resume_command=resume_command(fmt, session_id, info.workspace_root),
        )

    def agents(self) -> list[str]:
        """The agents (source formats) the catalog holds sessions of, by name."""
        catalog = self.reader()
        root_ids = root_ids_for(catalog, self.scope)
        sql, params = "SELECT DISTINCT format FROM sources", []
        if root_ids is not None:
            sql += f" WHERE root_id IN ({', '.join('?' for _ in root_ids)})"
            params = root_ids
        return sorted(str(row[0]) for row in catalog.db.execute(sql, params))

    def resolve(self, ref: str) -> SessionRef:
        """The session a ref names (L15): an id, a 6+ character prefix, ``id#N`` or a
        transcript path. Ambiguous and unknown refs are clear errors."""
        from convodex.catalog.refs import resolve

        catalog = self.reader()
        return resolve(catalog, ref, root_ids_for(catalog, self.scope))

    def document(self, target: SessionRef | str) -> SessionDocument:
        """One session's effective branch with every part, replayed from its transcript."""
        from convodex.sessions.transcript import read_document

        found = self.resolve(target) if isinstance(target, str) else target
        with self.interactive():
            return read_document(found)

    def _session_id(self, path: str) -> str:
        row = (
            self.reader()
            .db.execute("SELECT session_id FROM sources WHERE path = ?", (path,))
            .fetchone()
        )
        return str(row[0]) if row else ""

    def tree(self, progressive: bool = False, retry_failed: bool = False) -> Tree:
        """The session tree (L10); progressive answers at once from cached summaries."""
        if progressive and self.scheduler is not None:
            self.scheduler.defer()  # a lightweight refresh: defers new work, pauses nothing
        return self._listing().tree(self.reader(), self.runtime, progressive, retry_failed)

    def set_runtime(self, open: list[str], running: list[str], current: str | None) -> None:
        """Agent hosts report which sessions are open, running or current (memory only)."""
        self.runtime = RuntimeState(frozenset(open), frozenset(running), current)

    @contextlib.contextmanager
    def interactive(self) -> Iterator[None]:
        """A person is waiting: background indexing holds at its next batch boundary."""
        if self.scheduler is None:
            yield
            return
        with self.scheduler.interactive():
            yield

    @property
    def reason(self) -> str:
        """What the background scheduler is doing (``idle`` in the foreground)."""
        return self.scheduler.reason if self.scheduler is not None else "idle"

    # -- writes -----------------------------------------------------------------------

    def index(
        self, progress: IndexProgress | None = None, budget: Budget | None = None
    ) -> IndexStats:
        """Index the roots now, in this thread (scan, read, commit, clean up)."""
        from convodex.catalog.indexer import Indexer

        return Indexer(self.catalog, budget).run([r for r in self.roots if r.is_dir()], progress)

    # -- background lifetime ------------------------------------------------------------

    def start(self, *, watch: bool = False) -> HistoryService:
        """Keep the catalog current in the background: scans, hints, a file watcher."""
        from convodex.catalog.scheduler import Scheduler
        from convodex.hints import HintChannel, HintQueue

        settings = self.background
        queue = settings.hints if settings.hints is not None else HintQueue()
        self.scheduler = Scheduler(
            self.catalog,
            self.roots,
            budget=settings.budget,
            hints=queue,
            rescan_seconds=settings.rescan_seconds,
        )
        self.scheduler.listeners.append(self._refresh_listing(self.scheduler))
        if settings.listen_for_hints and self.catalog.mode == "disk":
            with contextlib.suppress(OSError):
                self.channel = HintChannel(config.hint_socket_path(self.cache_dir), queue)
        self.scheduler.start()
        if settings.search_workers and self.catalog.path is not None:
            from convodex.catalog.workers import SearchPool

            self.pool = SearchPool(self.catalog, settings.search_workers)
        if watch:
            self._watcher = threading.Thread(target=self._watch, name="convodex-watch", daemon=True)
            self._watcher.start()
        return self

    def _listing(self) -> Listing:
        if self.listing is None:
            from convodex.catalog.listing import Listing, SummaryCache

            disk = self.catalog.mode == "disk"
            path = config.summary_cache_path(self.cache_dir) if disk else None
            self.listing = Listing(SummaryCache(path))
        return self.listing

    def _refresh_listing(self, scheduler: Scheduler) -> Callable[[Event], None]:
        """Listing-metadata replay is scheduler work: on its thread, after indexing, at
        most about once a second while a rebuild runs."""
        last = [0.0]

        def refresh(event: Event) -> None:
            now = time.monotonic()
            if event.reason != "index" or now - last[0] > LISTING_REFRESH_SECONDS:
                last[0] = now
                self._listing().refresh(scheduler.catalog)

        return refresh

    def _watch(self) -> None:
        """External writers: every change to a transcript under a root becomes a hint."""
        import watchfiles

        from convodex.sources.discover import format_of

        roots = [str(r) for r in self.roots if r.is_dir()]
        if not roots or self.scheduler is None:
            return
        scheduler = self.scheduler
        # The watcher yields an empty set on each timeout: the first one says it runs.
        for changes in watchfiles.watch(
            *roots,
            stop_event=self._stop_watching,
            debounce=50,
            step=20,
            rust_timeout=200,
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            self.watching.set()
            for change, path in changes:
                if format_of(Path(path).name) is None:
                    continue
                if change == watchfiles.Change.deleted:
                    scheduler.request_scan()
                else:
                    scheduler.hint(path)

    def close(self) -> None:
        self._stop_watching.set()
        if self.pool is not None:
            self.pool.close()
        if self.scheduler is not None:
            self.scheduler.stop()
        if self._watcher is not None:
            self._watcher.join(5)
        if self.channel is not None:
            self.channel.close()
        with self._readers_lock:
            for catalog in self._readers:
                with contextlib.suppress(Exception):
                    catalog.close()
            self._readers.clear()
        self.catalog.close()
