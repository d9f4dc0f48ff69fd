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


def error_response(status: int, message: str) -> JSONResponse:
    """``{"ok": false, "error", "status"}``; the message never echoes request content."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
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
                log.error("unexpected %s in %s", type(exc).__name__, request.url.path)
                return error_response(500, "internal error")

        return wrapped

    return decorate
