"""The local surfaces asking the hub: ``convodex search --hub``, the page's hub column
and ``history_search`` over MCP send the same request to the hub's ranked search.

The query goes as typed (the hub parses it with the same L12 parser); the L13
filters that the hub's sessions know (agent, project, since, until) travel as
qualifiers and parameters. The caller's own sessions are asked for, and, with
``[hub] team``, the team's too; a hit in both comes back once.

A surface never waits long for the hub: :class:`HubQuestion` asks it in a thread of
its own while the local search runs, and its answer after at most
:data:`HUB_WAIT_S` is the hits or one line saying why there are none (never the
token, which stays in the request header).
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from collections.abc import Sequence

import msgspec

from convodex import config
from convodex.catalog.plan import SearchRequest
from convodex.errors import ConvodexError
from convodex.hub.client import HubClient, HubError
from convodex.hub.settings import HubSettings
from convodex.team_models import HubAnswer, RankedHit

#: the longest a surface waits for the hub beside its local answer
HUB_WAIT_S = 3.0


class _BoundedClient(HubClient):
    """The hub client with a short socket timeout: a surface's question is abandoned
    within :data:`HUB_WAIT_S`, so its connection must not outlive it by minutes."""

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = kind(self._host, self._port, timeout=HUB_WAIT_S)
        return self._conn


def _quoted(name: str, value: str) -> str:
    return f'{name}:"{value}"' if '"' not in value else ""


def shown_url(url: str) -> str:
    """The hub's URL as surfaces show it: without any user or password in it."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def search_hub(
    settings: HubSettings,
    query: str,
    *,
    limit: int = 20,
    agents: Sequence[str] = (),
    projects: Sequence[str] = (),
    since: str | None = None,
    until: str | None = None,
    client: type[HubClient] = HubClient,
) -> list[RankedHit]:
    """The hub's best hits for ``query``, best first."""
    text = " ".join([query, *(_quoted("agent", a) for a in agents)])
    params = {"q": text.strip(), "mode": "ranked", "limit": str(config.search_limit(limit))}
    if projects:
        params["project"] = projects[0]
    if since:
        params["since"] = since
    if until:
        params["until"] = until
    scopes = [{"scope": "account"}]
    if settings.team:
        scopes.append({"scope": "team", "team": settings.team})
    hits: dict[tuple[str, int], RankedHit] = {}
    with client(settings.url, settings.token) as hub:
        for scope in scopes:
            answer = hub.request(
                "GET", "/brain/search?" + urllib.parse.urlencode({**params, **scope})
            )
            if not isinstance(answer, dict):
                raise HubError(f"the hub at {settings.url} answered something else than hits")
            try:
                found = msgspec.convert(answer.get("hits", []), list[RankedHit])
            except msgspec.ValidationError:
                raise HubError(
                    f"the hub at {settings.url} answered hits of another shape"
                ) from None
            for hit in found:
                hits.setdefault((hit.session_id, hit.seq), hit)
    ranked = sorted(hits.values(), key=lambda h: (-h.score, h.ts), reverse=False)
    return ranked[:limit]


def ask_hub(settings: HubSettings, request: SearchRequest) -> HubAnswer:
    """The hub's answer to a local request: its hits, or the one line why not."""
    url = shown_url(settings.url)
    try:
        hits = search_hub(
            settings,
            request.query,
            limit=request.limit or config.DEFAULT_SEARCH_LIMIT,
            agents=request.agents,
            projects=request.projects,
            since=request.since,
            until=request.until,
            client=_BoundedClient,
        )
    except ConvodexError as exc:
        return HubAnswer(hub=url, error=str(exc).replace(settings.url, url))
    return HubAnswer(hub=url, hits=hits)


class HubQuestion:
    """The hub asked in a thread of its own, begun before the local search so the two
    run together; :meth:`answer` waits for it at most until ``wait`` seconds after the
    question began."""

    def __init__(self, settings: HubSettings, request: SearchRequest, wait: float = HUB_WAIT_S):
        self._settings, self._wait = settings, wait
        self._deadline = time.monotonic() + wait
        self._answer: HubAnswer | None = None
        self._done = threading.Event()
        threading.Thread(target=self._ask, args=(request,), daemon=True).start()

    def _ask(self, request: SearchRequest) -> None:
        try:
            self._answer = ask_hub(self._settings, request)
        except Exception as exc:  # a thread's traceback would reach stderr: one line instead
            url = shown_url(self._settings.url)
            self._answer = HubAnswer(
                hub=url, error=f"the hub at {url} failed ({type(exc).__name__})"
            )
        finally:
            self._done.set()

    def answer(self) -> HubAnswer:
        self._done.wait(max(0.0, self._deadline - time.monotonic()))
        if self._answer is not None:
            return self._answer
        url = shown_url(self._settings.url)
        return HubAnswer(hub=url, error=f"the hub at {url} did not answer within {self._wait:g} s")
