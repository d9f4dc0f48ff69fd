"""The one JSON error shape every convodex HTTP surface returns."""

from __future__ import annotations

from starlette.responses import JSONResponse


def error_response(status: int, message: str) -> JSONResponse:
    """``{"ok": false, "error", "status"}``; the message never echoes request content."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"ok": False, "error": message, "status": status}, status, headers)
