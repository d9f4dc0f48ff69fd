"""Hits as they go into an agent's context over MCP (SPEC X4, X11): no null or false
fields, ISO times, short snippets, likely secrets masked unless the server runs with
``--no-redact``; the local catalog's hits and the team hub's alike."""

from __future__ import annotations

import msgspec

from convodex.mcp_memory import iso_time
from convodex.models import CompactHit, CompactMoment, Hit
from convodex.team_models import HubAnswer
from convodex.text.redact import redact as mask

COMPACT_SNIPPET = 120


def compact_hit(hit: Hit, redact: bool = True) -> CompactHit:
    """A hit for an agent's context: no null or false fields, ISO times, a short snippet;
    likely secrets masked (X11) unless the server runs with ``--no-redact``."""
    clean = mask if redact else _same
    return CompactHit(
        ref=hit.ref,
        session_title=clean(hit.session_title) if hit.session_title else None,
        agent=hit.agent,
        project=hit.project,
        kind=hit.kind,
        role=hit.role,
        tool_name=hit.tool_name,
        snippet=shorten(clean(hit.snippet), COMPACT_SNIPPET),
        at=iso_time(hit.message_at if hit.message_at is not None else hit.last_activity_at),
        session_path=hit.session_path,
        message_index=hit.message_index,
        more_hits=hit.more_hits,
        moments=[
            CompactMoment(
                ref=m.ref, kind=m.kind, snippet=shorten(clean(m.snippet), COMPACT_SNIPPET)
            )
            for m in hit.moments or ()
        ]
        or None,
    )


def _same(text: str) -> str:
    return text


def shorten(snippet: str, length: int) -> str:
    """The middle ``length`` characters of a snippet (its match sits in the middle)."""
    if len(snippet) <= length:
        return snippet
    cut = (len(snippet) - length) // 2
    return "…" + snippet[cut : cut + length].strip(" …") + "…"


def compact_hub(answer: HubAnswer, redact: bool = True) -> HubAnswer:
    """The hub's answer with each hit's title and snippet as a local hit's: masked
    (another machine may have synced without redaction) and short."""
    clean = mask if redact else _same
    hits = [
        msgspec.structs.replace(
            hit,
            session_title=clean(hit.session_title),
            snippet=shorten(clean(hit.snippet), COMPACT_SNIPPET),
        )
        for hit in answer.hits
    ]
    return msgspec.structs.replace(answer, hits=hits)
