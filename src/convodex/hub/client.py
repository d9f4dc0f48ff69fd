"""A small HTTP client for the hub: one kept-alive connection, bearer token, JSON in and
out, 503 retried as the hub asks (``Retry-After``). The standard library's
``http.client`` is enough and keeps the lean install lean (no new dependency).

Errors are one :class:`~convodex.errors.ConvodexError` line that names the hub and
the status, never the token or what was sent.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from typing import Any

from convodex.errors import ConvodexError
from convodex.models import encode

#: how often a 503 (busy hub) is retried before the run gives up
RETRIES = 8
TIMEOUT_S = 120.0


class HubError(ConvodexError):
    """The hub refused a request or could not be reached."""

    status = 502


class HubClient:
    def __init__(self, url: str, token: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HubError("the hub URL must look like http://host:port")
        self.url = url
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._base = parts.path.rstrip("/")
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = kind(self._host, self._port, timeout=TIMEOUT_S)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """The decoded JSON answer of one request (retried while the hub is busy);
        ``body`` is plain data, or ``bytes`` already encoded as JSON."""
        data = body if isinstance(body, bytes) or body is None else encode(body)
        for attempt in range(RETRIES + 1):
            status, headers, raw = self._send(method, self._base + path, data)
            if status == 503 and attempt < RETRIES:
                wait = headers.get("retry-after", "1")
                time.sleep(min(float(wait) if wait.isdigit() else 1.0, 10.0))
                continue
            break
        try:
            answer = json.loads(raw) if raw else None
        except ValueError:
            answer = None
        if status >= 400:
            reason = answer.get("error") if isinstance(answer, dict) else None
            raise HubError(f"the hub at {self.url} answered {status}: {reason or 'an error'}")
        return answer

    def _send(
        self, method: str, path: str, data: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        for reconnect in (False, True):
            conn = self._connection()
            try:
                conn.request(method, path, body=data, headers=self._headers)
                response = conn.getresponse()
                raw = response.read()
                headers = {k.lower(): v for k, v in response.getheaders()}
                return response.status, headers, raw
            except (OSError, http.client.HTTPException) as exc:
                # A kept-alive connection the hub closed: one fresh connection, then give up.
                self.close()
                if reconnect:
                    raise HubError(
                        f"cannot reach the hub at {self.url} ({type(exc).__name__})"
                    ) from None
        raise AssertionError("unreachable")
