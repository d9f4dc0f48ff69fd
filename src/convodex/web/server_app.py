"""HTTP surface of the conversation server (SPEC S4, S5): ``/brain/search`` and the
authenticated journal write API. Thin: parse, authenticate, call the library in a
thread pool, shape JSON. Every error has one shape: ``{"ok": false, "error", "status"}``.

No driver is imported here: the library reports a busy or unreachable database as
:class:`~convodex.server.db.DatabaseUnavailable` (503 with ``Retry-After``), so this
module works on the lean install with SQLite.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convodex import config, models
from convodex.errors import InvalidInput, QueryError, Unauthorized
from convodex.server import browse, intake, journal
from convodex.server.accounts import Caller, authenticate
from convodex.server.db import EPOCH, Database
from convodex.server.inputs import check_seq, deeper_than
from convodex.server.ranked import RankedFilters, search_ranked
from convodex.server.replica import ReadRouter
from convodex.server.search import search_messages
from convodex.web.errors import error_response, json_errors

log = logging.getLogger("convodex.server.http")
access_log = logging.getLogger("convodex.server.access")

#: the hub page's own static files (apart from the local page's web/static/)
HUB_STATIC = Path(__file__).parent / "hub_static"
DEFAULT_LIMIT = 50  # a page of sessions (``/brain/sessions``)
#: the largest request body accepted (413 beyond); a message payload rarely nears it
MAX_BODY_BYTES = 16 * 1024 * 1024
#: the deepest nesting of arrays and objects accepted in a request body (400 beyond)
MAX_BODY_DEPTH = 64

_endpoint = json_errors(log)


class BodyTooLarge(InvalidInput):
    """The request body is over ``MAX_BODY_BYTES``."""

    status = 413


class AccessLog:
    """One log line per request: client, method, route template, status and time.

    Never the path as sent (it carries ids callers chose), its query string, a header
    or the body: no log line may carry a query, a token or content (SPEC S5).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            route = getattr(scope.get("route"), "path", "-")
            client = (scope.get("client") or ("-",))[0]
            access_log.info(
                '%s "%s %s" %d %.0f ms',
                client,
                scope["method"],
                route,
                status,
                (time.perf_counter() - started) * 1000,
            )


async def _caller(request: Request) -> Caller:
    db: Database = request.app.state.db
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("a bearer token is required")
    caller = await run_in_threadpool(authenticate, db, token.strip())
    request.state.caller = caller
    return caller


def _reads(request: Request, caller: Caller) -> Database:
    """Where ``caller``'s read goes: the replica, unless it lags the caller's writes."""
    router: ReadRouter = request.app.state.router
    return router.reader(caller)


def _writes(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """After a successful write, note the caller's WAL position (read-your-own-writes)."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        response = await handler(request)
        caller = getattr(request.state, "caller", None)
        if response.status_code < 300 and caller is not None:
            await run_in_threadpool(request.app.state.router.wrote, caller)
        return response

    return endpoint


async def _raw_body(request: Request) -> bytes:
    """The request body's bytes, within the size limit (SPEC S5)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BodyTooLarge(f"the request body is over {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BodyTooLarge(f"the request body is over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _body(request: Request) -> dict[str, Any]:
    """The JSON object body, within the size and nesting limits (SPEC S5)."""
    raw = await _raw_body(request)
    if not raw:
        return {}
    try:
        body = msgspec.json.decode(raw)
    except RecursionError:
        raise QueryError(_TOO_DEEP) from None
    except msgspec.DecodeError:
        raise QueryError("the request body must be JSON") from None
    if not isinstance(body, dict):
        raise QueryError("the request body must be a JSON object")
    if deeper_than(body, MAX_BODY_DEPTH):
        raise QueryError(_TOO_DEEP)
    return body


_TOO_DEEP = f"the request body nests deeper than {MAX_BODY_DEPTH} levels"


def _opt_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise QueryError(f"{key} must be a non-empty string")
    return value


def _seq(request: Request) -> int:
    return check_seq(request.path_params["seq"])


def _session_id(request: Request) -> str:
    return str(request.path_params["session_id"])


@_endpoint
async def search(request: Request) -> Response:
    caller = await _caller(request)
    params = request.query_params
    limit = config.server_search_limit(_int_param(request, "limit", config.DEFAULT_SEARCH_LIMIT))
    state = request.app.state
    if getattr(state, "search_limiter", None) is None:
        # Searches beyond the dialect's useful concurrency wait here, so writes (which
        # hold SQLite's one write connection) are not starved of the CPU.
        state.search_limiter = anyio.CapacityLimiter(state.db.dialect.concurrent_searches)
    mode = params.get("mode") or "literal"
    scope, team = params.get("scope") or "account", params.get("team") or None
    if mode == "ranked":
        filters = RankedFilters(
            agent=params.get("agent") or None,
            project=params.get("project") or None,
            since=params.get("since") or None,
            until=params.get("until") or None,
        )
        ranked = await anyio.to_thread.run_sync(
            lambda: search_ranked(
                _reads(request, caller),
                caller,
                params.get("q", ""),
                limit,
                scope,
                team=team,
                filters=filters,
                cursor=params.get("cursor") or None,
            ),
            limiter=state.search_limiter,
        )
        return Response(models.encode(ranked), media_type="application/json")
    if mode != "literal":
        raise QueryError("mode must be literal or ranked")
    hits = await anyio.to_thread.run_sync(
        lambda: search_messages(
            _reads(request, caller), caller, params.get("q", ""), limit, scope, team=team
        ),
        limiter=state.search_limiter,
    )
    return Response(models.encode({"hits": hits}), media_type="application/json")


def _int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except ValueError:
        raise QueryError(f"{name} must be an integer") from None


def _time_param(request: Request, name: str) -> int | None:
    """An ISO 8601 date or date-time (UTC unless it says otherwise) as microseconds."""
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise QueryError(f"{name} must be an ISO 8601 date or date-time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - EPOCH) // timedelta(microseconds=1)


@_endpoint
async def list_sessions(request: Request) -> Response:
    caller = await _caller(request)
    params = request.query_params
    filters = browse.SessionFilters(
        agent=params.get("agent") or None,
        project=params.get("project") or None,
        machine=params.get("machine") or None,
        since=_time_param(request, "since"),
        until=_time_param(request, "until"),
    )
    page = await run_in_threadpool(
        lambda: browse.list_sessions(
            _reads(request, caller),
            caller,
            scope=params.get("scope") or "account",
            team=params.get("team") or None,
            filters=filters,
            limit=_int_param(request, "limit", DEFAULT_LIMIT),
            cursor=params.get("cursor") or None,
        )
    )
    return Response(models.encode(page), media_type="application/json")


def _req_str(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise QueryError(f"{key} must be a string")
    return value


@_writes
@_endpoint
async def sync_session(request: Request) -> Response:
    """One part of a ``convodex sync`` upload (see :mod:`convodex.server.intake`),
    decoded straight into its typed form: each entry's payload stays the JSON text it
    came as (stored as it is, parsed once for its projection)."""
    caller = await _caller(request)
    upload = intake.decode_part(await _raw_body(request), MAX_BODY_DEPTH)
    session_id, state = await run_in_threadpool(
        lambda: intake.store_part(
            request.app.state.db,
            caller,
            machine=upload.machine,
            agent=upload.agent,
            local_id=upload.session_id,
            title=upload.title,
            project=upload.project,
            team=upload.team or None,
            digest=upload.digest,
            part=upload.part,
            final=upload.final,
            entries=upload.entries,
            forked_from=upload.forked_from or None,
            head=upload.head,
        )
    )
    return JSONResponse({"id": session_id, "state": state})


@_writes
@_endpoint
async def sync_deletion(request: Request) -> Response:
    caller = await _caller(request)
    body = await _body(request)
    session_id = await run_in_threadpool(
        lambda: intake.delete_synced(
            request.app.state.db,
            caller,
            machine=_req_str(body, "machine"),
            agent=_req_str(body, "agent"),
            local_id=_req_str(body, "sessionId"),
        )
    )
    return JSONResponse({"id": session_id, "state": intake.DELETED})


@_endpoint
async def read_session(request: Request) -> Response:
    caller = await _caller(request)
    view = await run_in_threadpool(
        lambda: browse.read_session(_reads(request, caller), caller, _session_id(request))
    )
    return Response(models.encode(view), media_type="application/json")


@_writes
@_endpoint
async def create_session(request: Request) -> Response:
    caller = await _caller(request)
    body = await _body(request)
    title = body.get("title", "")
    kind = body.get("kind", "personal")
    if not isinstance(title, str) or not isinstance(kind, str):
        raise QueryError("title and kind must be strings")
    session_id = await run_in_threadpool(
        lambda: journal.create_session(
            request.app.state.db,
            _opt_str(body, "ownerId") or caller.id,
            title=title,
            kind=kind,
            session_id=_opt_str(body, "id"),
            team=_opt_str(body, "team"),
            caller=caller,
        )
    )
    return JSONResponse({"id": session_id}, 201)


@_writes
@_endpoint
async def append_entry(request: Request) -> Response:
    caller = await _caller(request)
    body = await _body(request)
    payload = body.get("payload")
    parent = body.get("parentSeq")
    meta = body.get("meta", False)
    if not isinstance(payload, dict):
        raise QueryError("payload must be a message object")
    if parent is not None:
        check_seq(parent, "parentSeq")
    if not isinstance(meta, bool):
        raise QueryError("meta must be true or false")
    seq = await run_in_threadpool(
        lambda: journal.append(
            request.app.state.db,
            _session_id(request),
            payload,
            parent_seq=parent,
            meta=meta,
            caller=caller,
        )
    )
    return JSONResponse({"seq": seq}, 201)


@_writes
@_endpoint
async def rewrite_entry(request: Request) -> Response:
    caller = await _caller(request)
    body = await _body(request)
    payload = body.get("payload")
    if not isinstance(payload, dict):
        raise QueryError("payload must be a message object")
    await run_in_threadpool(
        lambda: journal.rewrite(
            request.app.state.db, _session_id(request), _seq(request), payload, caller=caller
        )
    )
    return JSONResponse({"ok": True})


def _entry_action(action: Callable[..., object]) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint that applies one journal action to one entry and answers ok."""

    @_writes
    @_endpoint
    async def endpoint(request: Request) -> Response:
        caller = await _caller(request)
        await run_in_threadpool(
            lambda: action(request.app.state.db, _session_id(request), _seq(request), caller=caller)
        )
        return JSONResponse({"ok": True})

    return endpoint


discard_entry = _entry_action(journal.discard)
restore_entry = _entry_action(journal.restore)
remove_entry = _entry_action(journal.remove)


@_writes
@_endpoint
async def fork_session(request: Request) -> Response:
    caller = await _caller(request)
    body = await _body(request)
    fork_id = await run_in_threadpool(
        lambda: journal.fork(
            request.app.state.db,
            _session_id(request),
            new_id=_opt_str(body, "id"),
            owner_id=_opt_str(body, "ownerId"),
            caller=caller,
        )
    )
    return JSONResponse({"id": fork_id}, 201)


@_writes
@_endpoint
async def rekey_session(request: Request) -> Response:
    caller = await _caller(request)
    body = await _body(request)
    session = await run_in_threadpool(
        lambda: journal.rekey(
            request.app.state.db,
            _session_id(request),
            new_id=_opt_str(body, "id"),
            owner_id=_opt_str(body, "ownerId"),
            kind=_opt_str(body, "kind"),
            caller=caller,
        )
    )
    return JSONResponse({"id": session.id, "ownerId": session.owner_id, "kind": session.kind})


@_writes
@_endpoint
async def clear_session(request: Request) -> Response:
    caller = await _caller(request)
    await run_in_threadpool(
        lambda: journal.clear(request.app.state.db, _session_id(request), caller=caller)
    )
    return JSONResponse({"ok": True})


async def hub_page(request: Request) -> Response:
    """The hub's web page (team search, session view); it holds no data: it asks the
    API with the token the person enters."""
    return FileResponse(HUB_STATIC / "index.html", media_type="text/html")


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    return error_response(status, str(detail))


def create_app(db: Database, replica: Database | None = None) -> Starlette:
    """The server app over an open database (and, optionally, a streaming replica that
    serves reads); the caller owns (and closes) both."""
    entry = "/brain/sessions/{session_id}/entries/{seq:int}"
    routes = [
        Route("/brain/search", search, methods=["GET"]),
        Route("/brain/sessions", create_session, methods=["POST"]),
        Route("/brain/sessions", list_sessions, methods=["GET"]),
        Route("/brain/sessions/{session_id}", read_session, methods=["GET"]),
        Route("/brain/sync/sessions", sync_session, methods=["POST"]),
        Route("/brain/sync/deletions", sync_deletion, methods=["POST"]),
        Route("/hub", hub_page, methods=["GET"]),
        Mount("/hub/static", StaticFiles(directory=HUB_STATIC), name="hub-static"),
        Route("/brain/sessions/{session_id}/entries", append_entry, methods=["POST"]),
        Route(entry, rewrite_entry, methods=["PUT"]),
        Route(entry, remove_entry, methods=["DELETE"]),
        Route(entry + "/discard", discard_entry, methods=["POST"]),
        Route(entry + "/restore", restore_entry, methods=["POST"]),
        Route("/brain/sessions/{session_id}/fork", fork_session, methods=["POST"]),
        Route("/brain/sessions/{session_id}/rekey", rekey_session, methods=["POST"]),
        Route("/brain/sessions/{session_id}/clear", clear_session, methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(AccessLog)],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.db = db
    app.state.router = ReadRouter(db, replica)
    return app
