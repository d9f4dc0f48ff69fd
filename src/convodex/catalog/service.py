"""The local history service: the one façade every surface calls (CLI, HTTP, MCP, picker).

It owns the catalog connections, the background scheduler and its helpers (watcher,
hint socket, listing refresh) and the runtime overlay, and answers in result models.
No surface talks SQL or opens a catalog itself. Two lifetimes:

- foreground (``HistoryService.open``): one connection; ``index`` runs in the
  caller's thread (the CLI);
- background (``start``): a scheduler thread keeps the catalog current while reads
  use one connection per worker thread, so reads never queue behind index writes.

Every call that touches the catalog goes through ``_guarded``: a damaged catalog
found by any of them is quarantined and rebuilt (L8) and the call answered again from
the new one, with progress saying how far the rebuild is; any other catalog failure
(a full disk, a lock held too long) is one ``CatalogError``, never a traceback.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import msgspec

from convodex import config
from convodex.catalog.db import (
    Catalog,
    catalog_error,
    is_corruption,
    open_catalog,
    open_current,
)
from convodex.catalog.hits import RuntimeState
from convodex.catalog.plan import SearchRequest
from convodex.catalog.progress import progress, root_ids_for
from convodex.catalog.refs import SessionRef, agents, message_count, root_of, root_paths, source_ref
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing
from convodex.errors import ConvodexError, SourceError
from convodex.models import (
    AroundResult,
    ContextMessage,
    DemoShare,
    Event,
    FailedSource,
    IndexStats,
    Progress,
    RecentPage,
    Refresh,
    SearchPage,
    SessionDocument,
    SessionMessage,
    SessionView,
    SimilarPage,
    Tree,
)
from convodex.sqlite import sqlite3
from convodex.text.agents import agent_label

if TYPE_CHECKING:
    from convodex.catalog.indexer import Progress as IndexProgress
    from convodex.catalog.listing import Listing
    from convodex.catalog.scheduler import Scheduler
    from convodex.catalog.search import Searcher
    from convodex.catalog.vectors import EmbedStats
    from convodex.hints import HintChannel, HintQueue
    from convodex.sources.base import Budget

# A rebuild refreshes listing summaries at most this often (the tree's progress),
# at most this many between two index batches.
LISTING_REFRESH_SECONDS = 1.0
LISTING_BATCH = 256
T = TypeVar("T")
_NOT_WATCHING = threading.Event()  # a service without a file watcher: never set


def _warn(message: str, *args: object) -> None:
    """A diagnostic (names and classes only, never content); logging loads on first use."""
    import logging

    logging.getLogger("convodex.service").warning(message, *args)


class Background(msgspec.Struct, frozen=True):
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
        follow_symlinks: bool = False,
        accelerators: Accelerators | None = None,
    ) -> None:
        self.catalog = catalog  # the owner connection: indexing writes here
        self.roots = roots
        # Read sources that are links out of their root (``--follow-symlinks``).
        self.follow_symlinks = follow_symlinks
        self.cache_dir = cache_dir
        # Searches see only these roots' sources (None: the whole catalog).
        self.scope = scope
        self.background = background or Background()
        # The accelerators (``catalog/speed``), from the environment unless given.
        if accelerators is None:
            workers = self.background.search_workers
            accelerators = Accelerators.from_config(search_workers=workers)
        self.speed = Wing(accelerators)
        self.runtime = RuntimeState()
        self.scheduler: Scheduler | None = None
        self.listing: Listing | None = None
        self.channel: HintChannel | None = None
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
        follow_symlinks: bool = False,
        accelerators: Accelerators | None = None,
    ) -> HistoryService:
        """Open the catalog under ``cache_dir`` by the open policy (L8).

        ``scoped``: searches see only ``roots``; ``background``: how ``start`` works;
        ``follow_symlinks``: index sources that are links out of their root;
        ``accelerators``: which speed-ups run (default: ``Accelerators.from_config``).
        """
        catalog = open_catalog(cache_dir)
        scope = roots if scoped else None
        return cls(
            catalog,
            roots,
            cache_dir=cache_dir,
            scope=scope,
            background=background,
            follow_symlinks=follow_symlinks,
            accelerators=accelerators,
        )

    @classmethod
    def open_existing(cls, cache_dir: Path | None, roots: list[Path]) -> HistoryService | None:
        """The catalog as it is, read-only: never created, migrated, checked or indexed.

        For callers that must not write or wait (the recall hook): None when there is no
        catalog file, or one of another schema than this build's.
        """
        catalog = open_current(config.catalog_path(cache_dir))
        return None if catalog is None else cls(catalog, roots, cache_dir=cache_dir)

    def __enter__(self) -> HistoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the catalog's failures ---------------------------------------------------------

    def _guarded(self, call: Callable[[], T]) -> T:
        """Run one call against the catalog (see the module's docstring).

        A damaged catalog is recovered once per call, also when another thread
        recovered it while this call ran (its connection was then closed under it).
        """
        generation = self.catalog.generation
        try:
            return call()
        except sqlite3.Error as exc:
            # A recovery under way (another thread found the damage first) closed this
            # call's connection or moved its file: wait for it, then retry on the new one.
            with self.catalog.recovery:
                recovered = self.catalog.generation != generation
            if not recovered and is_corruption(exc):
                recovered = self.catalog.recover(generation)
                if recovered:
                    _warn("the catalog was damaged: it was moved aside and is rebuilt")
            if not recovered:
                raise catalog_error(exc, self.catalog.path) from exc
        if self.scheduler is not None:
            self.scheduler.request_scan()
        try:
            return call()
        except sqlite3.Error as exc:
            raise catalog_error(exc, self.catalog.path) from exc

    # -- reads ------------------------------------------------------------------------

    def reader(self) -> Catalog:
        """The calling thread's read connection (the owner's until background starts)."""
        owner = self.catalog
        if self.scheduler is None or owner.mode == "memory":
            return owner  # foreground, or an in-memory catalog (one connection)
        catalog: Catalog | None = getattr(self._local, "catalog", None)
        if catalog is not None and catalog.generation != owner.generation:
            self._drop_reader(catalog)  # to the file recovery moved aside
            catalog = None
        if catalog is None:
            catalog = owner.another_reader()
            self._local.catalog = catalog
            with self._readers_lock:
                self._readers.append(catalog)
        return catalog

    def _drop_reader(self, catalog: Catalog) -> None:
        with contextlib.suppress(Exception):
            catalog.close()
        with self._readers_lock, contextlib.suppress(ValueError):
            self._readers.remove(catalog)

    def searcher(self) -> Searcher:
        from convodex.catalog.search import Searcher  # not on a no-op's path

        return Searcher(self.reader(), self.runtime, self.speed)

    def recent(self, request: SearchRequest | None = None) -> RecentPage:
        """Sessions newest first (L17) by the request's filters (no words), paged by
        ``limit`` and ``cursor`` or ``page``; never waits for indexing."""
        from convodex.catalog.recent import recent

        asked = request or SearchRequest()
        if self.scope is not None and asked.roots is None:
            asked = asked.with_roots(self.scope)
        listing = self._guarded(lambda: recent(self.reader(), asked, self.runtime))
        listing.progress = self._said(listing.progress)
        return listing

    def search(self, request: SearchRequest) -> SearchPage:
        """One page of hits; never waits for indexing (progress says how far it is).
        A query of no words browses: the sessions ``recent`` lists, and no hits."""
        from convodex.catalog.recent import as_search_page, is_browse

        if self.scope is not None and request.roots is None:
            request = request.with_roots(self.scope)
        if is_browse(request):
            return as_search_page(self.recent(request))
        with self.interactive() if request.around else contextlib.nullcontext():
            pooled = self._guarded(lambda: self.speed.pooled(self.catalog, request))
            if pooled is None:
                page = self._guarded(lambda: self.searcher().search(request))
                page.progress = self._said(page.progress)
                return page
            page = pooled
        page.progress = self._said(page.progress)
        runtime = self.runtime  # the overlay lives in this process, not in the workers
        for hit in page.hits:
            hit.open = hit.session_id in runtime.open
            hit.running = hit.session_id in runtime.running
            hit.current = hit.session_id == runtime.current
        return page

    def progress(self) -> Progress:
        def run() -> Progress:
            catalog = self.reader()
            return progress(catalog, root_ids_for(catalog, self.scope), self.speed)

        return self._said(self._guarded(run))

    def demo(self) -> DemoShare | None:
        """How much of the answers is the bundled demo's: all (its own catalog, opened
        when you have no sessions), some (an older version indexed it into yours)."""
        from convodex.catalog.demo import share

        if self.scope is not None:
            return share(self.scope)
        try:
            return share(root_paths(self.reader()))
        except (sqlite3.Error, ConvodexError):
            return None

    def _said(self, state: Progress) -> Progress:
        """``state``, marked when the demo is in the answers (every surface says so)."""
        from convodex.catalog.demo import labelled

        return labelled(state, self.demo())

    def find_source(self, session_id: str | None, path: str | None) -> tuple[str, str]:
        """(path, format) of a session by id (its newest source) or by transcript path.

        A scoped service finds only sessions under its roots.
        """
        found = self._source_ref(session_id, path)
        return found.session_path, found.agent

    def _source_ref(self, session_id: str | None, path: str | None) -> SessionRef:
        catalog = self.reader()
        return source_ref(catalog, session_id, path, root_ids_for(catalog, self.scope))

    def around(
        self,
        message_index: int,
        *,
        session_id: str | None = None,
        path: str | None = None,
        before: int = 3,
        after: int = 3,
        query: str | None = None,
    ) -> AroundResult:
        """The messages around one message of a session, read from its source; with
        ``query`` (the search that found it), each with where that query matches."""
        from convodex.catalog.transcript import marks_of

        marking = marks_of(query)

        def run() -> tuple[SessionRef, list[ContextMessage]]:
            found = self._source_ref(session_id, path)
            path_ = found.session_path
            return found, self.searcher().around(path_, message_index, before, after, marking)

        with self.interactive():
            found, messages = self._guarded(run)
        return AroundResult(
            session_id=found.session_id, session_path=found.session_path, messages=messages
        )

    def session(
        self, session_id: str, path: str | None = None, query: str | None = None
    ) -> SessionView:
        """A whole session's effective branch, replayed from its transcript (the one
        read path: ``document``'s, in the page's shape); with ``query``, each message
        with where that query matches."""
        from convodex.catalog.transcript import marked, marks_of, read_document

        marking = marks_of(query)
        with self.interactive():
            found = self._guarded(lambda: self._source_ref(session_id, path))
            self._check_readable(found.session_path, found.agent)
            document = read_document(found, strict=False)
        return SessionView(
            session_id=session_id,
            session_path=found.session_path,
            title=document.title,
            workspace_root=document.project,
            messages=[
                marked(
                    SessionMessage(
                        message_index=entry.message_index,
                        role=entry.role,
                        text="\n".join(part.text for part in entry.parts),
                    ),
                    marking,
                )
                for entry in document.messages
            ],
            agent=agent_label(found.agent),
            resume_command=document.resume_command,
        )

    def failed_sources(self) -> list[FailedSource]:
        """The failed sources of this service's roots (every root when it has none)."""
        from convodex.catalog.failures import failed_sources

        reader, roots = self.reader, self.scope or self.roots or None
        return self._guarded(lambda: failed_sources(reader().db, root_ids_for(reader(), roots)))

    def agents(self) -> list[str]:
        """The agents (source formats) the catalog holds sessions of, by name."""
        catalog = self.reader()
        return agents(catalog, root_ids_for(catalog, self.scope))

    def message_count(self) -> int:
        """How many messages the catalog holds: the scale relevance is judged on (recall
        asks how rare its words are against it). A sum over sources, not over messages."""
        return self._guarded(lambda: message_count(self.reader()))

    def resolve(self, ref: str) -> SessionRef:
        """The session a ref names (L15): an id, a 6+ character prefix, ``id#N`` or a
        transcript path. Ambiguous and unknown refs are clear errors."""
        from convodex.catalog.refs import resolve

        catalog = self.reader()
        return resolve(catalog, ref, root_ids_for(catalog, self.scope))

    def document(self, target: SessionRef | str) -> SessionDocument:
        """One session's effective branch with every part, replayed from its transcript."""
        from convodex.catalog.transcript import read_document

        found = self.resolve(target) if isinstance(target, str) else target
        with self.interactive():
            return read_document(found)

    def similar(self, ref: str, limit: int | None = None, mode: str = "auto") -> SimilarPage:
        """The sessions most like the one ``ref`` names (L19 ``similar``): by meaning
        when the catalog holds its embeddings, else by its most telling words."""
        from convodex.catalog.similar import similar

        found = self.resolve(ref)
        document = self.document(found)
        return self._guarded(
            lambda: similar(self.reader(), found, document, limit, mode, self.runtime)
        )

    def _check_readable(self, path: str, fmt: str) -> None:
        """Refuse to replay a source that must not be read now: no longer a regular
        file (a FIFO would block), or a link out of its root (unless followed)."""
        from convodex.sources.base import NotARegularFile
        from convodex.sources.discover import leaves_root, source_stat

        try:
            source_stat(fmt, path)
        except NotARegularFile as exc:
            raise SourceError(path, "not a regular file") from exc
        except OSError as exc:
            raise SourceError(path, f"cannot be read ({type(exc).__name__})") from exc
        root = self._guarded(lambda: root_of(self.reader(), path))
        if not self.follow_symlinks and root is not None and leaves_root(Path(path), root):
            raise SourceError(path, "is a link out of its root (--follow-symlinks reads it)")

    def tree(self, progressive: bool = False, retry_failed: bool = False) -> Tree:
        """The session tree (L10); progressive answers at once from cached summaries."""
        if progressive and self.scheduler is not None:
            self.scheduler.defer()  # a lightweight refresh: defers new work, pauses nothing
        return self._guarded(
            lambda: self._listing().tree(self.reader(), self.runtime, progressive, retry_failed)
        )

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

    def refresh(self, budget_seconds: float | None = None) -> Refresh:
        """Bring in what changed since the last index within ``budget_seconds`` (L17;
        ``freshness``); a background service keeps its catalog current itself."""
        from convodex.catalog.freshness import refresh

        if self.scheduler is not None:
            return Refresh()
        budget = budget_seconds or config.REFRESH_BUDGET.value() / 1000
        scope, follow = self.scope, self.follow_symlinks
        return self._guarded(lambda: refresh(self.catalog, scope, budget, follow))

    def index(
        self,
        progress: IndexProgress | None = None,
        budget: Budget | None = None,
        embedding: IndexProgress | None = None,
        *,
        embed: bool = True,
    ) -> IndexStats:
        """Index the roots now, in this thread; a damaged catalog is quarantined and the
        run starts over (a rebuild). Nothing changed: no indexer loaded. ``embedding``:
        how far the embedding pass after it is; ``embed=False`` leaves that pass (and
        the model's one-time distillation) to a later run."""
        same = self.index_if_unchanged(embedding, embed=embed)  # stale bands catch up at the next
        if same is not None:  # run that changes something, or hourly
            return same
        from convodex.catalog.indexer import Indexer

        stats = self._guarded(
            lambda: Indexer(
                self.catalog, budget, follow_symlinks=self.follow_symlinks, speed=self.speed
            ).run([r for r in self.roots if r.is_dir()], progress)
        )
        if embed:
            self.embed(progress=embedding)
        return stats

    def embed(self, progress: IndexProgress | None = None) -> EmbedStats | None:
        """Embeddings for what lexical indexing committed (L19), after it (its results
        never wait), when the semantic extra is installed (else nothing is imported)."""
        from convodex import semantic

        if not semantic.wanted():
            return None
        from convodex.catalog.vectors import embed_if_enabled

        return self._guarded(lambda: embed_if_enabled(self.catalog, None, progress))

    def index_if_unchanged(
        self, embedding: IndexProgress | None = None, *, embed: bool = True
    ) -> IndexStats | None:
        """``index`` when nothing changed (``unchanged``), embeddings owed too; else None."""
        from convodex.catalog.unchanged import unchanged
        from convodex.sources.roots import as_root

        roots = [as_root(r) for r in self.roots if r.is_dir()]
        same = self._guarded(lambda: unchanged(self.catalog, roots, self.follow_symlinks))
        if same is not None and embed:
            self.embed(progress=embedding)
        return same

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
            follow_symlinks=self.follow_symlinks,
            speed=self.speed,
        )
        self.scheduler.listeners.append(self._refresh_listing(self.scheduler))
        from convodex.catalog.vectors import after_indexing

        scheduler = self.scheduler
        scheduler.listeners.append(after_indexing(scheduler.catalog, lambda: scheduler.stopping))
        if settings.listen_for_hints and self.catalog.mode == "disk":
            with contextlib.suppress(OSError):
                self.channel = HintChannel(config.hint_socket_path(self.cache_dir), queue)
        self.scheduler.start(watch=watch)
        if self.speed.settings.search_workers:
            from convodex.catalog.speed.workers import SearchPool

            self.speed.start_workers(self.catalog, SearchPool)
        return self

    @property
    def watching(self) -> threading.Event:
        """Set once the file watcher runs (``start(watch=True)``)."""
        watcher = self.scheduler.watcher if self.scheduler is not None else None
        return watcher.watching if watcher is not None else _NOT_WATCHING

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

        def go_on() -> bool:
            return not scheduler.stopping  # a stop ends the replay: the next one goes on

        def refresh(event: Event) -> None:
            now = time.monotonic()
            if event.reason != "index" or now - last[0] > LISTING_REFRESH_SECONDS:
                last[0] = now
                # Between batches a bounded share; after a scan, a hint or a removal,
                # every summary still missing (the tree's "loading" count settles).
                limit = LISTING_BATCH if event.reason == "index" else None
                self._listing().refresh(scheduler.catalog, limit, go_on)

        return refresh

    def close(self) -> None:
        """Stop background work (at its next batch boundary, waited for briefly) and
        close every connection; a commit still under way ends first (the lock)."""
        if self.scheduler is not None:
            self.scheduler.stop()  # and its file watcher
        if self.channel is not None:
            self.channel.close()
        self.speed.close()
        with self._readers_lock:
            for catalog in self._readers:
                with contextlib.suppress(Exception):
                    catalog.close()
            self._readers.clear()
        with self.catalog.lock:
            self.catalog.close()
