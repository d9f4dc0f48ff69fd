"""The conversation server's and the team hub's answers (SPEC S): typed like every
result (camelCase on the wire) and encoded by :func:`convodex.models.encode`; kept apart
from the local-history models because only the server, the hub client and their
surfaces use them."""

from __future__ import annotations

from convodex.models import CompactPage, Model, SearchPage

__all__ = [
    "HubAnswer",
    "HubCompactPage",
    "LocalAndHub",
    "HubEntry",
    "HubSession",
    "HubSessionPage",
    "HubSessionView",
    "RankedHit",
    "RankedPage",
    "ServerHit",
    "SyncItem",
    "SyncReport",
]


class ServerHit(Model):
    """One conversation-server hit (SPEC S3), newest first."""

    session_id: str
    session_title: str
    seq: int
    role: str
    snippet: str
    ts: str
    owner_id: str


class RankedHit(ServerHit):
    """One ranked hub hit (SPEC S6): the literal hit's fields, where it came from, and
    its score (higher is better; comparable within one response only)."""

    machine: str
    agent: str
    project: str
    score: float


class RankedPage(Model):
    """A page of ranked hits, best first; ``next_cursor`` continues it."""

    hits: list[RankedHit]
    next_cursor: str | None


class HubSession(Model):
    """One session of the hub as ``GET /brain/sessions`` lists it (SPEC S6)."""

    id: str
    title: str
    owner_id: str
    kind: str
    team: str | None
    machine: str
    agent: str
    project: str
    created_at: str
    updated_at: str
    forked_from: str | None


class HubSessionPage(Model):
    """A page of sessions, newest activity first; ``next_cursor`` continues it."""

    sessions: list[HubSession]
    next_cursor: str | None


class HubEntry(Model):
    """One entry of a session's effective branch with its shown text."""

    seq: int
    role: str
    ts: str
    text: str


class HubSessionView(Model):
    """``GET /brain/sessions/{id}``: the session and its effective branch."""

    session: HubSession
    entries: list[HubEntry]


class SyncItem(Model):
    """What ``convodex sync`` did (or, with ``--dry-run``, would do) with one session."""

    agent: str
    session_id: str
    #: send | unchanged | delete | deleted-on-hub | excluded | failed
    action: str
    bytes: int = 0


class SyncReport(Model):
    """``convodex sync --json``: counts, volume and each session's action."""

    hub: str
    machine: str
    dry_run: bool
    sent: int
    unchanged: int
    deleted: int
    refused: int
    excluded: int
    failed: int
    bytes_sent: int
    seconds: float
    sessions: list[SyncItem]


class HubAnswer(Model, kw_only=True, omit_defaults=True):
    """The hub's hits for a local search, shown beside the local ones by the CLI, the
    page and MCP (SPEC S6): each says its machine and owner. When the hub could not
    answer in time, ``error`` is one line saying why (never the token) and the local
    answer stands."""

    hub: str
    hits: list[RankedHit] = []
    error: str | None = None


class LocalAndHub(Model):
    """``convodex search --hub --json``: the local page and the hub's answer."""

    local: SearchPage
    hub: HubAnswer


class HubCompactPage(CompactPage, kw_only=True, omit_defaults=True):
    """``history_search`` with a hub configured: the compact page and the hub's hits."""

    hub: HubAnswer | None = None
