"""One search's plan (SPEC L12, L13): the parsed query, its filters as SQL, its order.

Surfaces hand over a :class:`SearchRequest` (words, filters and order as people give
them); :func:`make_plan` parses the query once, merges inline qualifiers with the
request's filters, validates every value, and resolves them into SQL constraints on
document rowids, so every filter runs inside SQL before paging and a page is never
short because of one. The plan's ``key`` ties cursors to exactly this search.
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from convodex.catalog.db import Catalog
from convodex.catalog.rowids import TABLES
from convodex.errors import QueryError
from convodex.sqlite import marks
from convodex.text.dates import parse_time
from convodex.text.documents import KINDS, Kind, parse_kinds
from convodex.text.query import Query, match_expression, parse, tool_expression

Sort = Literal["relevance", "newest", "oldest"]
SORTS: tuple[Sort, ...] = ("relevance", "newest", "oldest")
ROLES = ("user", "assistant", "tool")
# What each role says (L2 kinds): tool calls are the assistant's, results the tool's.
ROLE_KINDS: dict[str, tuple[Kind, ...]] = {
    "user": ("user_text",),
    "assistant": ("assistant_text", "tool_input"),
    "tool": ("tool_output", "tool_error"),
}
MIN_SESSION_PREFIX = 6


class SearchRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One search as every surface asks it (L4, L12, L13); validated by ``make_plan``.

    Filters given here and the query's inline qualifiers mean the same and combine:
    values of one filter are alternatives (any may match), filters all apply.
    """

    # Words and qualifiers (L12); without words it browses sessions (L17).
    query: str = ""
    kinds: Sequence[str] | None = None
    limit: int | None = None
    cursor: str | None = None
    # A page by number (1: the first), instead of a cursor.
    page: int | None = None
    # Messages of context before and after each hit (0: none).
    around: int = 0
    sort: str = "relevance"
    include_subagents: bool = False
    # Each session once, by its best hit, with how many more it has (L19); False: one
    # hit per document.
    group: bool = True
    # Only these roots' sources (None: the whole catalog).
    roots: Sequence[Path] | None = None
    agents: Sequence[str] = ()
    projects: Sequence[str] = ()
    since: str | None = None
    until: str | None = None
    tools: Sequence[str] = ()
    roles: Sequence[str] = ()
    sessions: Sequence[str] = ()
    # "Now" for relative times (epoch ms); None: the clock.
    now_ms: int | None = None
    # auto | lexical | hybrid (L19): auto fuses meaning in when the catalog can.
    mode: str = "auto"

    def with_roots(self, roots: Sequence[Path]) -> SearchRequest:
        return msgspec.structs.replace(self, roots=tuple(roots))


class Where(msgspec.Struct):
    """SQL conditions on a document's ``rowid`` (ANDed) and their parameters."""

    sql: list[str] = msgspec.field(default_factory=list)
    params: list[Any] = msgspec.field(default_factory=list)

    def add(self, condition: str, *params: Any) -> None:
        self.sql.append(condition)
        self.params.extend(params)

    def text(self) -> str:
        return "".join(f" AND ({c})" for c in self.sql)


class Plan(msgspec.Struct):
    """Everything about one search that every page of it shares."""

    query: Query
    kinds: tuple[Kind, ...]
    sort: Sort
    include_subagents: bool
    group: bool
    since: int | None
    until: int | None
    tools: tuple[str, ...]
    # Source-level constraints (roots, agents, projects, sessions, activity), as a
    # sources WHERE clause; None when no source is excluded by them.
    sources_sql: str | None
    sources_params: list[Any]
    # Sessions named by messages inside a file of many (``messages.session_key``).
    session_keys: tuple[str, ...]
    key: str

    def match(self, table: str) -> str:
        """The MATCH text for one table (tool output keeps no positions)."""
        text = match_expression(self.query.tree, positions=table == "documents")
        if self.tools:
            text = f"({text}) AND ({tool_expression(self.tools)})"
        return text

    def tables(self) -> list[str]:
        """The FTS5 tables this search reads: tool output lives apart (L2 defaults)."""
        out = []
        if any(k != "tool_output" for k in self.kinds):
            out.append("documents")
        if "tool_output" in self.kinds:
            out.append("outputs")
        return out

    def where(self, table: str, *, subagents: bool = False) -> Where:
        """Every filter as conditions on ``rowid`` of ``table``.

        ``subagents``: the opposite of the default exclusion, to learn whether
        sub-agent sessions would have matched (``subagentHits``).
        """
        where = Where()
        layout = TABLES[table]
        # Qualified: inside a subquery on ``messages``, a bare ``rowid`` is its own.
        rowid = f"{table}.rowid"
        base = layout.base_sql(rowid)
        main = [k for k in self.kinds if k in layout.codes]
        if len(main) < len(layout.kinds):
            where.add(
                f"{layout.kind_sql(rowid)} IN ({marks(main)})", *(layout.codes[k] for k in main)
            )
        slot = layout.slot_sql(rowid)
        if self.sources_sql is not None:
            where.add(
                f"{slot} IN (SELECT slot FROM slots WHERE source_id IN "
                f"(SELECT id FROM sources WHERE {self.sources_sql}))",
                *self.sources_params,
            )
        # Sub-agent and headless sessions, and sub-agent work inside a parent's file,
        # carry the sub-agent bit in every rowid; they are left out unless asked for:
        # inside SQL, before ranking, by arithmetic on the rowid (a lookup per match in
        # the sub-agent sources cost 10 of 60 ms on a common word).
        if subagents:
            where.add(f"{layout.subagent_sql(rowid)} != 0")
        elif not self.include_subagents:
            where.add(f"{layout.subagent_sql(rowid)} = 0")
        if self.since is not None or self.until is not None:
            where.add(
                f"(SELECT at FROM messages WHERE base = {base}) BETWEEN ? AND ?",
                self.since if self.since is not None else -(2**62),
                self.until if self.until is not None else 2**62,
            )
        if self.session_keys:
            # A file of many sessions: a message of another session than its source's
            # counts only when its own session is named.
            keys = marks(self.session_keys)
            named = f"(SELECT session_key FROM messages WHERE base = {base})"
            where.add(
                f"(({named}) IS NULL AND {slot} IN (SELECT slot FROM slots "
                f"WHERE source_id IN (SELECT id FROM sources WHERE session_id IN ({keys})))) "
                f"OR ({named}) IN ({keys})",
                *self.session_keys,
                *self.session_keys,
            )
        return where


class Filters(msgspec.Struct):
    """A request's filters, validated and resolved: what a search and a browse share."""

    kinds: tuple[Kind, ...]
    since: int | None
    until: int | None
    tools: tuple[str, ...]
    roots: list[str] | None
    # Source-level constraints as a sources WHERE clause (empty: none).
    where: list[str]
    params: list[Any]
    session_keys: tuple[str, ...]

    def key_parts(self) -> list[Any]:
        return [
            self.roots,
            self.where,
            [str(p) for p in self.params],
            list(self.session_keys),
            self.since,
            self.until,
            list(self.tools),
        ]


def make_plan(catalog: Catalog, request: SearchRequest) -> Plan:
    """Parse and validate one request into a plan; bad values are one ``QueryError``."""
    query = parse(request.query)
    sort = next((s for s in SORTS if s == request.sort), None)
    if sort is None:
        raise QueryError(f"sort must be one of {', '.join(SORTS)}")
    found = filters(catalog, request, query.qualifiers)
    key_parts = [
        query.key(),
        list(found.kinds),
        sort,
        request.include_subagents,
        request.group,
        *found.key_parts(),
    ]
    raw = msgspec.json.encode(key_parts)
    return Plan(
        query=query,
        kinds=found.kinds,
        sort=sort,
        include_subagents=request.include_subagents,
        group=request.group,
        since=found.since,
        until=found.until,
        tools=found.tools,
        sources_sql=" AND ".join(found.where) if found.where else None,
        sources_params=found.params,
        session_keys=found.session_keys,
        key=plan_key(raw),
    )


def plan_key(raw: bytes) -> str:
    """A short key of a plan's encoded parts (cursors carry it)."""
    return f"{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}"


def filters(catalog: Catalog, request: SearchRequest, given: dict[str, tuple[str, ...]]) -> Filters:
    """The request's filters merged with the query's qualifiers (``given``), validated."""
    kinds = _kinds(
        [*(request.kinds or ()), *given.get("kind", ())],
        [
            *request.roles,
            *given.get("role", ()),
        ],
    )
    now = request.now_ms if request.now_ms is not None else int(time.time() * 1000)
    since = _one("since", request.since, given.get("since", ()))
    until = _one("until", request.until, given.get("until", ()))
    since_ms = None if since is None else parse_time(since, now, name="since")
    until_ms = None if until is None else parse_time(until, now, name="until", end_of_day=True)
    tools = tuple(dict.fromkeys(t.strip() for t in [*request.tools, *given.get("tool", ())]))
    if any(not t for t in tools):
        raise QueryError("tool: needs a tool name")
    where: list[str] = []
    params: list[Any] = []
    roots = None if request.roots is None else sorted(str(r) for r in request.roots)
    if roots is not None and _outside(catalog, roots):
        where.append(f"root_id IN (SELECT id FROM roots WHERE path IN ({marks(roots)}))")
        params.extend(roots)
    agents = _agents([*request.agents, *given.get("agent", ())])
    if agents:
        where.append(f"format IN ({marks(agents)})")
        params.extend(agents)
    projects = [*request.projects, *given.get("project", ())]
    if projects:
        sql, values = _projects(projects)
        where.append(sql)
        params.extend(values)
    sessions = _sessions([*request.sessions, *given.get("session", ())])
    session_keys: tuple[str, ...] = ()
    if sessions:
        session_keys = _resolve_sessions(catalog, sessions)
        if not session_keys:
            session_keys = ("\0",)  # nothing can match: no such session
    if since_ms is not None:
        where.append("(last_activity_at IS NULL OR last_activity_at >= ?)")
        params.append(since_ms)
    if until_ms is not None:
        where.append("(first_activity_at IS NULL OR first_activity_at <= ?)")
        params.append(until_ms)
    return Filters(
        kinds=kinds,
        since=since_ms,
        until=until_ms,
        tools=tools,
        roots=roots,
        where=where,
        params=params,
        session_keys=session_keys,
    )


def _outside(catalog: Catalog, roots: list[str]) -> bool:
    """Whether the catalog holds a root besides ``roots``. A service scoped to every
    root the catalog holds (``serve --root``, the usual case) filters nothing, and the
    filter cost a check per match: 104 → 124 ms for ``the`` on 210 MB."""
    row = catalog.db.execute(
        f"SELECT 1 FROM roots WHERE path NOT IN ({marks(roots)}) LIMIT 1", roots
    ).fetchone()
    return row is not None


def _one(name: str, option: str | None, inline: Sequence[str]) -> str | None:
    values = [v for v in [option, *inline] if v is not None and v.strip()]
    if len(set(values)) > 1:
        raise QueryError(f"{name} is given more than once")
    return values[0] if values else None


def _kinds(kinds: list[str], roles: list[str]) -> tuple[Kind, ...]:
    """Kinds asked for, narrowed to the roles asked for (both: what both allow)."""
    chosen = parse_kinds(kinds) if kinds else None
    if not roles:
        return chosen if chosen is not None else parse_kinds(None)
    allowed: list[Kind] = []
    for role in roles:
        name = role.strip().lower()
        if name not in ROLE_KINDS:
            raise QueryError(f"unknown role; expected one of {', '.join(ROLES)}")
        allowed.extend(ROLE_KINDS[name])
    if chosen is None:
        return tuple(k for k in KINDS if k in allowed)
    both = tuple(k for k in chosen if k in allowed)
    if not both:
        raise QueryError("those kinds and roles have nothing in common")
    return both


def agent_name(value: str) -> str:
    """An agent as people write it: ``claude-code``, ``claude_code`` and ``claude``
    alike (``text.agents``)."""
    from convodex.text.agents import agent_key

    return agent_key(value)


def _agents(values: list[str]) -> list[str]:
    if not values:
        return []
    from convodex.sources.registry import FORMATS

    names = list(dict.fromkeys(agent_name(v) for v in values))
    unknown = [n for n in names if n not in FORMATS]
    if unknown:
        from convodex.text.agents import agent_label, did_you_mean

        raise QueryError(
            f"unknown agent;{did_you_mean(unknown[0], FORMATS)} known: "
            + ", ".join(sorted(agent_label(n) for n in FORMATS))
        )
    return names


def project_path(value: str) -> str | None:
    """An absolute, normalized path when ``value`` names one (``~``, ``.``, ``/…``)."""
    text = value.strip()
    if not text:
        raise QueryError("project: needs a path or a name")
    if text.startswith(("/", "~", ".")) or os.sep in text:
        return os.path.normpath(os.path.abspath(os.path.expanduser(text)))
    return None


def _projects(values: list[str]) -> tuple[str, list[Any]]:
    """A session's workspace is the path itself, below it, or has it as its last name."""
    clauses: list[str] = []
    params: list[Any] = []
    for value in values:
        path = project_path(value)
        if path is not None:
            below = path.rstrip("/") + "/"
            clauses.append("(workspace = ? OR substr(workspace, 1, ?) = ?)")
            params.extend([path, len(below), below])
        else:
            name = value.strip().rstrip("/")
            clauses.append("(workspace = ? OR substr(workspace, -?) = ?)")
            params.extend([name, len(name) + 1, "/" + name])
    return "(" + " OR ".join(clauses) + ")", params


def _sessions(values: list[str]) -> list[str]:
    out = []
    for value in values:
        text = value.strip().split("#", 1)[0]  # a ref names its session too
        if not text:
            raise QueryError("session: needs a session id")
        out.append(text)
    return out


def _resolve_sessions(catalog: Catalog, values: list[str]) -> tuple[str, ...]:
    """Full session ids for ids and unique-enough prefixes (at least 6 characters)."""
    found: list[str] = []
    db = catalog.db
    for value in values:
        exact = db.execute(
            "SELECT 1 FROM sources WHERE session_id = ? UNION ALL "
            "SELECT 1 FROM messages WHERE session_key = ? LIMIT 1",
            (value, value),
        ).fetchone()
        if exact is not None or len(value) < MIN_SESSION_PREFIX:
            found.append(value)
            continue
        pattern = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        found.extend(
            str(row[0])
            for row in db.execute(
                "SELECT session_id FROM sources WHERE session_id LIKE ? ESCAPE '\\' UNION "
                "SELECT session_key FROM messages WHERE session_key LIKE ? ESCAPE '\\'",
                (pattern, pattern),
            )
        )
    return tuple(dict.fromkeys(found))
