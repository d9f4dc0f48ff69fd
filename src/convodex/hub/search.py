"""``convodex search --hub``: the same request asked of the hub's ranked search.

The query goes as typed (the hub parses it with the same L12 parser); the L13
filters that the hub's sessions know (agent, project, since, until) travel as
qualifiers and parameters. The caller's own sessions are asked for, and, with
``[hub] team``, the team's too; a hit in both comes back once.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence

import msgspec

from convodex import config
from convodex.hub.client import HubClient
from convodex.hub.settings import HubSettings
from convodex.team_models import RankedHit


def _quoted(name: str, value: str) -> str:
    return f'{name}:"{value}"' if '"' not in value else ""


def search_hub(
    settings: HubSettings,
    query: str,
    *,
    limit: int = 20,
    agents: Sequence[str] = (),
    projects: Sequence[str] = (),
    since: str | None = None,
    until: str | None = None,
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
    with HubClient(settings.url, settings.token) as client:
        for scope in scopes:
            answer = client.request(
                "GET", "/brain/search?" + urllib.parse.urlencode({**params, **scope})
            )
            found = msgspec.convert(answer.get("hits", []), list[RankedHit], from_attributes=False)
            for hit in found:
                hits.setdefault((hit.session_id, hit.seq), hit)
    ranked = sorted(hits.values(), key=lambda h: (-h.score, h.ts), reverse=False)
    return ranked[:limit]
