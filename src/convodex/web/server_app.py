"""HTTP surface of the conversation server (SPEC S4): ``/brain/search`` and the
authenticated journal write API. Thin: parse, authenticate, call the library in a
thread pool, shape JSON. Every error has one shape: ``{"ok": false, "error", "status"}``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
import psycopg_pool
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from convodex.errors import QueryError, Unauthorized
from convodex.server import journal
from convodex.server.accounts import Caller, authenticate
from convodex.server.db import Database
from convodex.server.search import search_messages
from convodex.web.errors import error_response, json_errors

log = logging.getLogger("convodex.server.http")

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

_endpoint = json_errors(log, (psycopg_pool.PoolTimeout, psycopg.OperationalError))


async def _caller(request: Request) -> Caller:
    db: Database = request.app.state.db
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("a bearer token is required")
    return await run_in_threadpool(authenticate, db, token.strip())


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        body = await request.json()
    except ValueError:
        raise QueryError("the request body must be JSON") from None
    if not isinstance(body, dict):
        raise QueryError("the request body must be a JSON object")
    return body


def _opt_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise QueryError(f"{key} must be a non-empty string")
    return value


def _seq(request: Request) -> int:
    return int(request.path_params["seq"])


def _session_id(request: Request) -> str:
    return str(request.path_params["session_id"])


@_endpoint
async def search(request: Request) -> Response:
    caller = await _caller(request)
    params = request.query_params
    raw_limit = params.get("limit")
    try:
        limit = DEFAULT_LIMIT if raw_limit in (None, "") else int(raw_limit)
    except ValueError:
        raise QueryError("limit must be an integer") from None
    limit = min(limit, MAX_LIMIT)
    hits = await run_in_threadpool(
        search_messages,
        request.app.state.db,
        caller,
        params.get("q", ""),
        limit,
        params.get("scope") or "account",
    )
    return JSONResponse({"hits": [hit.as_json() for hit in hits]})


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
            caller=caller,
        )
    )
    return JSONResponse({"id": session_id}, 201)


@_endpoint
async def append_entry(request: Request) -> Response:
    caller = await _caller(request)
    body = await _body(request)
    payload = body.get("payload")
    parent = body.get("parentSeq")
    meta = body.get("meta", False)
    if not isinstance(payload, dict):
        raise QueryError("payload must be a message object")
    if parent is not None and (isinstance(parent, bool) or not isinstance(parent, int)):
        raise QueryError("parentSeq must be an integer")
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


@_endpoint
async def clear_session(request: Request) -> Response:
    caller = await _caller(request)
    await run_in_threadpool(
        lambda: journal.clear(request.app.state.db, _session_id(request), caller=caller)
    )
    return JSONResponse({"ok": True})


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    return error_response(status, str(detail))


def create_app(db: Database) -> Starlette:
    """The server app over an open database; the caller owns (and closes) ``db``."""
    entry = "/brain/sessions/{session_id}/entries/{seq:int}"
    routes = [
        Route("/brain/search", search, methods=["GET"]),
        Route("/brain/sessions", create_session, methods=["POST"]),
        Route("/brain/sessions/{session_id}/entries", append_entry, methods=["POST"]),
        Route(entry, rewrite_entry, methods=["PUT"]),
        Route(entry, remove_entry, methods=["DELETE"]),
        Route(entry + "/discard", discard_entry, methods=["POST"]),
        Route(entry + "/restore", restore_entry, methods=["POST"]),
        Route("/brain/sessions/{session_id}/fork", fork_session, methods=["POST"]),
        Route("/brain/sessions/{session_id}/rekey", rekey_session, methods=["POST"]),
        Route("/brain/sessions/{session_id}/clear", clear_session, methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error})
    app.state.db = db
    return app
