"""The one JSON error shape every convodex HTTP surface returns, and the wrapper that
turns exceptions into it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import wraps

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from convodex.errors import ConvodexError

Handler = Callable[[Request], Awaitable[Response]]


#: seconds a client is asked to wait before retrying a 503 (busy or unavailable)
RETRY_AFTER_SECONDS = 1


def error_response(status: int, message: str) -> JSONResponse:
    """``{"ok": false, "error", "status"}``; the message never echoes request content."""
    headers = None
    if status == 401:
        headers = {"WWW-Authenticate": "Bearer"}
    elif status == 503:
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    return JSONResponse({"ok": False, "error": message, "status": status}, status, headers)


def json_errors(
    log: logging.Logger, unavailable: tuple[type[BaseException], ...] = ()
) -> Callable[[Handler], Handler]:
    """Wrap a handler: library errors keep their status, ``unavailable`` ones are 503,
    anything else is a 500 logged by class and path only (never by content)."""

    def decorate(handler: Handler) -> Handler:
        @wraps(handler)
        async def wrapped(request: Request) -> Response:
            try:
                return await handler(request)
            except ConvodexError as exc:
                return error_response(exc.status, str(exc))
            except unavailable as exc:
                log.warning("database unavailable: %s", type(exc).__name__)
                return error_response(503, "the database is unavailable")
            except Exception as exc:
                # The handler's name, not the path: paths carry ids callers chose.
                log.error("unexpected %s in %s", type(exc).__name__, handler.__name__)
                return error_response(500, "internal error")

        return wrapped

    return decorate
