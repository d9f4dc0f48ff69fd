"""The local history service over HTTP (SPEC L7, L9, L10, X3): thin, never blocking.

Handlers parse, call the library in the thread pool and shape JSON. Search answers
from the catalog with explicit progress and never waits for indexing; the session
tree answers progressively; interactive reads preempt background indexing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from convodex import config
from convodex.catalog.db import Catalog, connect, open_catalog
from convodex.catalog.listing import Listing, SummaryCache
from convodex.catalog.scheduler import Event, Scheduler
from convodex.catalog.search import RuntimeState, Searcher, progress
from convodex.errors import NotFound, QueryError
from convodex.hints import HintChannel, HintQueue
from convodex.sources.base import Budget, ReadResult
from convodex.sources.discover import FORMATS, format_of
from convodex.web.errors import error_response, json_errors

log = logging.getLogger("convodex.web")
STATIC = Path(__file__).parent / "static"
EVENT_POLL_SECONDS = 0.25


@dataclass
class LocalService:
    """Everything one serving process owns: catalogs, scheduler, listing, runtime state."""

    roots: list[Path]
    scheduler: Scheduler
    listing: Listing
    runtime: RuntimeState = field(default_factory=RuntimeState)
    channel: HintChannel | None = None
    watcher: threading.Thread | None = None
    stop_watching: threading.Event = field(default_factory=threading.Event)
    _local: threading.local = field(default_factory=threading.local)
    _readers: list[Catalog] = field(default_factory=list)
    _readers_lock: threading.Lock = field(default_factory=threading.Lock)

    def reader(self) -> Catalog:
        """A read connection per worker thread: reads never queue behind index writes."""
        catalog: Catalog | None = getattr(self._local, "catalog", None)
        if catalog is None:
            owner = self.scheduler.catalog
            if owner.path is None:
                return owner  # an in-memory catalog exists on one connection only
            # Already opened (and migrated) by the scheduler: a plain connection suffices,
            # read-only when the catalog is degraded.
            degraded = owner.mode == "degraded"
            catalog = Catalog(connect(str(owner.path), read_only=degraded), owner.path, owner.mode)
            self._local.catalog = catalog
            with self._readers_lock:
                self._readers.append(catalog)
        return catalog

    def start(self, watch: bool) -> None:
        self.scheduler.start()
        if watch:
            self.watcher = threading.Thread(target=self._watch, name="convodex-watch", daemon=True)
            self.watcher.start()

    def close(self) -> None:
        self.stop_watching.set()
        self.scheduler.stop()
        if self.watcher is not None:
            self.watcher.join(5)
        if self.channel is not None:
            self.channel.close()
        with self._readers_lock:
            for catalog in self._readers:
                with contextlib.suppress(Exception):
                    catalog.close()
            self._readers.clear()
        self.scheduler.catalog.close()

    def _watch(self) -> None:
        """External writers: every change to a transcript under a root becomes a hint."""
        import watchfiles

        roots = [str(r) for r in self.roots if r.is_dir()]
        if not roots:
            return
        for changes in watchfiles.watch(
            *roots,
            stop_event=self.stop_watching,
            debounce=50,
            step=20,
            rust_timeout=500,
            raise_interrupt=False,
        ):
            for change, path in changes:
                if format_of(Path(path).name) is None:
                    continue
                if change == watchfiles.Change.deleted:
                    self.scheduler.request_scan()
                else:
                    self.scheduler.hint(path)


def create_service(
    cache_dir: Path | None,
    roots: list[Path],
    *,
    rescan_seconds: float = 60.0,
    hints: HintQueue | None = None,
    budget: Budget | None = None,
    listen_for_hints: bool = True,
) -> LocalService:
    catalog = open_catalog(cache_dir)
    queue = hints if hints is not None else HintQueue()
    scheduler = Scheduler(catalog, roots, budget=budget, hints=queue, rescan_seconds=rescan_seconds)
    cache_path = config.summary_cache_path(cache_dir) if catalog.mode == "disk" else None
    service = LocalService(roots, scheduler, Listing(SummaryCache(cache_path)))

    last_refresh = [0.0]

    def summarize_in_background(event: Event) -> None:
        # Listing-metadata replay is scheduler work: it runs on its thread, after
        # indexing, at most about once a second while a rebuild runs.
        now = time.monotonic()
        if event.reason != "index" or now - last_refresh[0] > 1.0:
            last_refresh[0] = now
            service.listing.refresh(scheduler.catalog)

    scheduler.listeners.append(summarize_in_background)
    if listen_for_hints and catalog.mode == "disk":
        with contextlib.suppress(OSError):
            service.channel = HintChannel(config.hint_socket_path(cache_dir), queue)
    return service


_endpoint = json_errors(log)


def _int(request: Request, name: str, default: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise QueryError(f"{name} must be an integer") from exc


def _service(request: Request) -> LocalService:
    service: LocalService = request.app.state.service
    return service


@_endpoint
async def search(request: Request) -> Response:
    service = _service(request)
    params = request.query_params
    query = params.get("q", "")
    kinds = params.getlist("kind")
    limit = _int(request, "limit")
    around = _int(request, "around", 0) or 0
    cursor = params.get("cursor") or None
    latest = params.get("latest") in ("1", "true")

    def run() -> dict[str, Any]:
        searcher = Searcher(service.reader(), service.runtime)
        return searcher.search(
            query, kinds=kinds, limit=limit, cursor=cursor, around=around, latest=latest
        )

    # At most one search per core at a time: more threads only trade the GIL back and
    # forth, which lowered throughput and raised every request's latency.
    limiter: anyio.CapacityLimiter = request.app.state.search_limiter
    if around:
        with service.scheduler.interactive():
            return JSONResponse(await anyio.to_thread.run_sync(run, limiter=limiter))
    return JSONResponse(await anyio.to_thread.run_sync(run, limiter=limiter))


@_endpoint
async def tree(request: Request) -> Response:
    service = _service(request)
    progressive = request.query_params.get("progressive") in ("1", "true")
    retry = request.query_params.get("retryMetadata") in ("1", "true")
    if progressive:
        service.scheduler.defer()  # a lightweight refresh: defers new work, pauses nothing

    def run() -> dict[str, Any]:
        return service.listing.tree(service.reader(), service.runtime, progressive, retry)

    return JSONResponse(await run_in_threadpool(run))


def _find_source(service: LocalService, session_id: str, path: str | None) -> tuple[str, str]:
    db = service.reader().db
    if path:
        row = db.execute(
            "SELECT path, format FROM sources WHERE path = ? AND session_id = ?", (path, session_id)
        ).fetchone()
    else:
        row = db.execute(
            "SELECT path, format FROM sources WHERE session_id = ? "
            "ORDER BY last_activity_at DESC LIMIT 1",
            (session_id,),
        ).fetchone()
    if row is None:
        raise NotFound("no such session")
    return str(row[0]), str(row[1])


@_endpoint
async def session(request: Request) -> Response:
    service = _service(request)
    session_id = request.path_params["session_id"]

    def run() -> dict[str, Any]:
        path, fmt = _find_source(service, session_id, request.query_params.get("path"))
        reader = FORMATS[fmt]
        info = reader.info(Path(path))
        messages = [
            {"messageIndex": m.index, "role": m.role, "text": m.text()}
            for m in reader.read(Path(path), ReadResult(0, 0), Budget.from_env())
        ]
        return {
            "sessionId": session_id,
            "sessionPath": path,
            "title": info.title,
            "workspaceRoot": info.workspace_root,
            "messages": messages,
        }

    with service.scheduler.interactive():
        return JSONResponse(await run_in_threadpool(run))


@_endpoint
async def around(request: Request) -> Response:
    service = _service(request)
    session_id = request.path_params["session_id"]
    index = _int(request, "index")
    if index is None or index < 0:
        raise QueryError("index is required")
    before = _int(request, "before", 3) or 0
    after = _int(request, "after", 3) or 0

    def run() -> dict[str, Any]:
        path, _ = _find_source(service, session_id, request.query_params.get("path"))
        messages = Searcher(service.reader(), service.runtime).around(path, index, before, after)
        return {"sessionId": session_id, "sessionPath": path, "messages": messages}

    with service.scheduler.interactive():
        return JSONResponse(await run_in_threadpool(run))


@_endpoint
async def status(request: Request) -> Response:
    service = _service(request)
    return JSONResponse(await run_in_threadpool(lambda: progress(service.reader())))


class _Runtime(msgspec.Struct):
    open: list[str] = []
    running: list[str] = []
    current: str | None = None


@_endpoint
async def set_runtime(request: Request) -> Response:
    """Agent hosts report which sessions are open, running or current (memory only)."""
    try:
        body = msgspec.json.decode(await request.body(), type=_Runtime)
    except msgspec.DecodeError as exc:
        raise QueryError("body must be {open: [...], running: [...], current: id}") from exc
    _service(request).runtime = RuntimeState(
        frozenset(body.open), frozenset(body.running), body.current
    )
    return JSONResponse({"ok": True})


async def events(request: Request) -> Response:
    """Server-sent progress events as indexing advances; counts only."""
    service = _service(request)

    async def stream() -> AsyncIterator[bytes]:
        last: dict[str, Any] | None = None
        while not await request.is_disconnected():
            state = await run_in_threadpool(lambda: progress(service.reader()))
            payload = {
                key: state[key] for key in ("revision", "indexed", "total", "pending", "failed")
            }
            payload["reason"] = service.scheduler.reason
            if payload != last:
                last = payload
                yield b"data: " + msgspec.json.encode(payload) + b"\n\n"
            await asyncio.sleep(EVENT_POLL_SECONDS)

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )


async def index_page(request: Request) -> Response:
    page = STATIC / "index.html"
    if not page.exists():
        return error_response(404, "the web page is not installed")
    return FileResponse(page, headers={"Cache-Control": "no-store"})


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    return error_response(status, str(detail))


class _TokenAuth(BaseHTTPMiddleware):
    """With --allow-remote every data request needs the bearer token.

    The page itself and its static files hold no data and load without it; the page
    then sends the token (from its URL) with every API request.
    """

    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.url.path == "/" or request.url.path.startswith("/static/"):
            return await call_next(request)
        header = request.headers.get("authorization", "")
        supplied = header[7:] if header.lower().startswith("bearer ") else ""
        if not supplied:
            supplied = request.query_params.get("token", "")
        if not hmac.compare_digest(supplied.encode(), self.token.encode()):
            return error_response(401, "a valid bearer token is required")
        return await call_next(request)


def create_app(service: LocalService, *, watch: bool = True, token: str | None = None) -> Starlette:
    """The ASGI app; the service starts with the app and stops with it."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # The indexer shares this process: shorter GIL turns keep requests snappy.
        switch = sys.getswitchinterval()
        sys.setswitchinterval(min(switch, 0.001))
        app.state.search_limiter = anyio.CapacityLimiter(os.cpu_count() or 2)
        service.start(watch)
        try:
            yield
        finally:
            await run_in_threadpool(service.close)
            sys.setswitchinterval(switch)

    routes: list[BaseRoute] = [
        Route("/", index_page),
        Route("/search", search),
        Route("/tree", tree),
        Route("/sessions/{session_id}", session),
        Route("/sessions/{session_id}/around", around),
        Route("/status", status),
        Route("/runtime", set_runtime, methods=["POST"]),
        Route("/events", events),
    ]
    if STATIC.is_dir():
        routes.append(Mount("/static", StaticFiles(directory=STATIC), name="static"))
    middleware = [Middleware(_TokenAuth, token=token)] if token else []
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=middleware,
        exception_handlers={HTTPException: _http_error, Exception: _http_error},
    )
    app.state.service = service
    return app
