"""The local history service over HTTP (SPEC L7, L9, L10, X3): thin, never blocking.

Handlers parse, call the library in the thread pool and shape JSON. Search answers
from the catalog with explicit progress and never waits for indexing; the session
tree answers progressively; interactive reads preempt background indexing.

Only loopback host names (and names the user configured) are answered, so a web page
cannot reach the server through DNS rebinding, and a state-changing request from
another origin is refused (SPEC X9).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import os
import sys
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from convodex.catalog.demo import sentence as demo_sentence
from convodex.catalog.plan import SearchRequest
from convodex.catalog.progress import progress_sentence
from convodex.catalog.service import HistoryService
from convodex.errors import QueryError
from convodex.hub.search import HubQuestion
from convodex.hub.settings import HubSettings
from convodex.models import Progress, encode
from convodex.web.errors import error_response, json_errors
from convodex.web.responses import ModelResponse

log = logging.getLogger("convodex.web")
STATIC = Path(__file__).parent / "static"
EVENT_POLL_SECONDS = 0.25


_endpoint = json_errors(log)


# Integers in requests stay well inside SQLite's 64 bits (a message index, a limit).
MAX_INT_PARAM = 2**53


def _int(request: Request, name: str, default: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise QueryError(f"{name} must be an integer") from exc
    if abs(value) > MAX_INT_PARAM:
        raise QueryError(f"{name} is out of range")
    return value


def _service(request: Request) -> HistoryService:
    service: HistoryService = request.app.state.service
    return service


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name) in ("1", "true")


def _group(request: Request) -> bool:
    """``group=0`` (or ``false``): one hit per document; grouped by default (L19)."""
    value = request.query_params.get("group") or "1"
    if value not in ("0", "1", "false", "true"):
        raise QueryError("group must be 1 or 0")
    return value in ("1", "true")


def _search_request(request: Request) -> SearchRequest:
    params = request.query_params
    # ``latest=1`` is the older spelling of ``sort=newest``.
    sort = params.get("sort") or ("newest" if _flag(request, "latest") else "relevance")
    return SearchRequest(
        query=params.get("q", ""),
        kinds=params.getlist("kind"),
        limit=_int(request, "limit"),
        cursor=params.get("cursor") or None,
        around=_int(request, "around", 0) or 0,
        sort=sort,
        include_subagents=_flag(request, "includeSubagents"),
        agents=params.getlist("agent"),
        projects=params.getlist("project"),
        since=params.get("since") or None,
        until=params.get("until") or None,
        tools=params.getlist("tool"),
        roles=params.getlist("role"),
        sessions=params.getlist("session"),
        group=_group(request),
        mode=params.get("mode") or "auto",
    )


@_endpoint
async def search(request: Request) -> Response:
    service = _service(request)
    search_request = _search_request(request)
    # At most one search per core at a time: more threads only trade the GIL back and
    # forth, which lowered throughput and raised every request's latency.
    limiter: anyio.CapacityLimiter = request.app.state.search_limiter
    page = await anyio.to_thread.run_sync(service.search, search_request, limiter=limiter)
    return ModelResponse(page)


@_endpoint
async def hub_search(request: Request) -> Response:
    """The same request asked of the configured hub (SPEC S6), apart from ``/search`` so
    the page shows its local hits at once; the token stays in this process. Without a
    hub: 204, no content."""
    hub: HubSettings | None = request.app.state.hub
    if hub is None:
        return Response(status_code=204)  # no hub configured: the page stops asking
    question = HubQuestion(hub, _search_request(request))
    return ModelResponse(await anyio.to_thread.run_sync(question.answer))


@_endpoint
async def tree(request: Request) -> Response:
    service = _service(request)
    progressive, retry = _flag(request, "progressive"), _flag(request, "retryMetadata")
    return ModelResponse(await run_in_threadpool(service.tree, progressive, retry))


@_endpoint
async def session(request: Request) -> Response:
    service = _service(request)
    session_id = request.path_params["session_id"]
    path = request.query_params.get("path")
    query = request.query_params.get("q") or None  # marks where it matches
    return ModelResponse(await run_in_threadpool(service.session, session_id, path, query))


@_endpoint
async def around(request: Request) -> Response:
    service = _service(request)
    index = _int(request, "index")
    if index is None or index < 0:
        raise QueryError("index is required")

    def run() -> Any:
        return service.around(
            index,
            session_id=request.path_params["session_id"],
            path=request.query_params.get("path"),
            before=_int(request, "before", 3) or 0,
            after=_int(request, "after", 3) or 0,
            query=request.query_params.get("q") or None,
        )

    return ModelResponse(await run_in_threadpool(run))


@_endpoint
async def similar(request: Request) -> Response:
    """The sessions most like one (L19): ``path=`` or the id in the URL names it."""
    service = _service(request)
    ref = request.query_params.get("path") or request.path_params["session_id"]
    limit, mode = _int(request, "limit"), request.query_params.get("mode") or "auto"
    return ModelResponse(await run_in_threadpool(service.similar, ref, limit, mode))


EXPORT_TYPES = {
    "markdown": ("text/markdown; charset=utf-8", "md"),
    "html": ("text/html; charset=utf-8", "html"),
    "json": ("application/json", "json"),
}


@_endpoint
async def export(request: Request) -> Response:
    """One session as a self-contained document (L15), offered as a download."""
    from convodex.catalog.transcript import redact_document
    from convodex.sessions.export import export as render_export

    service = _service(request)
    fmt = request.query_params.get("format") or "markdown"
    if fmt not in EXPORT_TYPES:
        raise QueryError(f"format must be one of {', '.join(EXPORT_TYPES)}")
    session_id = request.path_params["session_id"]
    path = request.query_params.get("path")

    def run() -> tuple[str, str]:
        target = None
        if path:  # a transcript path picks the file when a session spans several
            with contextlib.suppress(QueryError):
                target = service.resolve(path)
        if target is None or target.session_id != session_id:
            target = service.resolve(session_id)
        document = service.document(target)
        if _flag(request, "redact"):
            document = redact_document(document)
        return render_export(document, fmt), document.session_id

    body, name = await run_in_threadpool(run)
    media, suffix = EXPORT_TYPES[fmt]
    filename = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:120]
    headers = {
        "Content-Disposition": f'attachment; filename="{filename}.{suffix}"',
        "Cache-Control": "no-store",
        # Exported content is data, never a page that runs anything.
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
        "X-Content-Type-Options": "nosniff",
    }
    return Response(body, media_type=media, headers=headers)


class ProgressView(Progress):
    """Progress as the page shows it: the counts, the library's sentence for them, and
    why the scheduler last ran (``reason``)."""

    sentence: str = ""
    reason: str = ""


def _progress_view(service: HistoryService) -> ProgressView:
    state = service.progress()
    fields = {name: getattr(state, name) for name in state.__struct_fields__}
    # Answers from the bundled demo say so first (``catalog.demo``).
    said = demo_sentence(state, progress_sentence(state))
    return ProgressView(**fields, sentence=said, reason=service.reason)


@_endpoint
async def status(request: Request) -> Response:
    return ModelResponse(await run_in_threadpool(_progress_view, _service(request)))


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
    _service(request).set_runtime(body.open, body.running, body.current)
    return JSONResponse({"ok": True})


async def events(request: Request) -> Response:
    """Server-sent progress as indexing advances: the state, its counts and the
    library's sentence for them (what ``/status`` answers), never content."""
    service = _service(request)

    async def stream() -> AsyncIterator[bytes]:
        last: bytes | None = None
        while not await request.is_disconnected():
            payload = encode(await run_in_threadpool(_progress_view, service))
            if payload != last:
                last = payload
                yield b"data: " + payload + b"\n\n"
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


# Requests that change nothing: any origin may send them (it cannot read the answer).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def host_name(host: str) -> str:
    """The name in a ``Host`` header (or an authority): no port, no IPv6 brackets,
    lower case, no trailing dot."""
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else name[1:]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    return name.rstrip(".")


def is_loopback_name(name: str) -> bool:
    """``localhost`` (and ``*.localhost``, which browsers resolve to loopback
    themselves) or a loopback address."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class _LocalOnly:
    """DNS rebinding and cross-site writes (SPEC X9).

    A ``Host`` that is not a loopback name nor one of ``hosts`` is refused, whatever
    address the request came in on: a page whose name an attacker rebinds to 127.0.0.1
    sends its own name. A state-changing request whose ``Origin`` is another than
    this server's is refused (a form post needs no CORS preflight); one without an
    ``Origin`` (curl, an agent host) comes from no web page and passes.
    """

    def __init__(self, app: ASGIApp, hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = frozenset(host_name(h) for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        name = host_name(host)
        if not (is_loopback_name(name) or name in self.hosts):
            await error_response(403, "host not allowed")(scope, receive, send)
            return
        origin = headers.get("origin")
        if scope["method"] not in SAFE_METHODS and origin is not None:
            own = urllib.parse.urlsplit(f"{scope.get('scheme', 'http')}://{host}")
            theirs = urllib.parse.urlsplit(origin)
            if (theirs.scheme, theirs.netloc.lower()) != (own.scheme, own.netloc.lower()):
                await error_response(403, "cross-origin request refused")(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(
    service: HistoryService,
    *,
    watch: bool = True,
    token: str | None = None,
    allowed_hosts: Iterable[str] = (),
    beside: Callable[[HistoryService], Callable[[], None]] | None = None,
    hub: HubSettings | None = None,
) -> Starlette:
    """The ASGI app; the service starts with the app and stops with it.

    ``beside``: starts what runs beside the service while the app serves (the CLI's
    warm service, SPEC L20) and returns what stops it.

    ``allowed_hosts``: host names answered besides the loopback ones (the bound
    address, and the names configured with ``--allow-remote``).

    ``hub``: the team hub ``/hub/hits`` asks beside the local search (SPEC S6).
    """

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # The indexer shares this process: shorter GIL turns keep requests snappy.
        switch = sys.getswitchinterval()
        sys.setswitchinterval(min(switch, 0.001))
        service.start(watch=watch)
        # Short commands of the same user and catalog ask this process (SPEC L20).
        stop_beside = beside(service) if beside is not None else None
        # In-process searches: one per core (more threads only trade the GIL). With
        # worker processes, a few more waiting threads keep every worker busy.
        pool = service.speed.workers * 4
        app.state.search_limiter = anyio.CapacityLimiter(pool or os.cpu_count() or 2)
        try:
            yield
        finally:
            if stop_beside is not None:
                stop_beside()
            await run_in_threadpool(service.close)
            sys.setswitchinterval(switch)

    routes: list[BaseRoute] = [
        Route("/", index_page),
        Route("/search", search),
        Route("/hub/hits", hub_search),
        Route("/tree", tree),
        Route("/sessions/{session_id}", session),
        Route("/sessions/{session_id}/around", around),
        Route("/sessions/{session_id}/similar", similar),
        Route("/sessions/{session_id}/export", export),
        Route("/status", status),
        Route("/runtime", set_runtime, methods=["POST"]),
        Route("/events", events),
    ]
    if STATIC.is_dir():
        routes.append(Mount("/static", StaticFiles(directory=STATIC), name="static"))
    middleware = [Middleware(_LocalOnly, hosts=list(allowed_hosts))]
    if token:
        middleware.append(Middleware(_TokenAuth, token=token))
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=middleware,
        exception_handlers={HTTPException: _http_error, Exception: _http_error},
    )
    app.state.service = service
    app.state.hub = hub
    return app
