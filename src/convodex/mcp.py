"""The ``history_search`` and ``history_session`` tools for agents over MCP (SPEC L7,
L15, X4).

Each tool's name, description, input schema, defaults and parameter order are a
contract agents are prompted with, so they are declared once here as constants and
pinned byte for byte by a snapshot test. A tool call never scans directories: the
catalog is kept current by the background scheduler, and every answer says first
when the index is still incomplete. Queries and message text are never logged.
"""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import anyio

from convodex import config
from convodex.catalog.plan import SORTS, SearchRequest
from convodex.catalog.service import Background, HistoryService
from convodex.errors import ConvodexError, QueryError
from convodex.hub.search import HubQuestion
from convodex.hub.settings import HubSettings
from convodex.mcp_compact import compact_hit, compact_hub
from convodex.mcp_memory import iso_time as iso_time  # re-exported: the contract's helpers
from convodex.mcp_memory import progress_line as progress_line
from convodex.mcp_memory import similar_sessions
from convodex.models import (
    Progress,
    SessionEntry,
    SessionPart,
    SessionWindow,
    encode,
    to_builtins,
)
from convodex.team_models import HubCompactPage
from convodex.text.documents import DEFAULT_KINDS, KINDS
from convodex.text.redact import redact as mask

TOOL_NAME: Final = "history_search"
OPERATIONS: Final = ("search", "around", "similar")
DEFAULT_LIMIT: Final = config.AGENT_SEARCH_LIMIT
MAX_LIMIT: Final = config.MAX_SEARCH_LIMIT
DEFAULT_CONTEXT: Final = 3
MAX_CONTEXT: Final = config.MAX_AROUND
RESCAN_SECONDS: Final = 30.0

TOOL_DESCRIPTION: Final = (
    "Search every past conversation with AI agents on this machine: what the user asked, "
    "what the agent answered, the tool calls it made and the errors they returned. "
    'operation "search" ranks messages by relevance to `query` (all words must match; '
    '"quoted phrases", OR, -word and prefix* work too), optionally only one `agent`, '
    "`project`, or time range (`since`, `until`), or newest first (`sort`), and returns "
    "compact hits with a `ref`, sessionPath, messageIndex and a short snippet; pass "
    '`nextCursor` back as `cursor` for the next page. operation "around" returns the '
    "messages before and after `messageIndex` in the session at `sessionPath`, to read a "
    'hit in context. operation "similar" lists the sessions most like the session at '
    "`sessionPath` (by meaning when embeddings exist, else by its telling words). With a "
    "team hub configured, a search's `hub` holds the hub's hits too, each with its "
    "machine and ownerId (or `error`: why the hub could not answer). The "
    "result is JSON. While the index is still being built its first "
    'line says "index is still building (indexed/total); results may be incomplete".'
)

INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "operation": {
            "type": "string",
            "enum": list(OPERATIONS),
            "default": "search",
            "description": 'What to do: "search" finds messages, "around" reads one in '
            'context, "similar" lists the sessions most like one.',
        },
        "query": {
            "type": "string",
            "description": "search: the words to find; every word must match (case and "
            "accents are ignored).",
        },
        "kinds": {
            "type": "array",
            "items": {"type": "string", "enum": list(KINDS)},
            "uniqueItems": True,
            "default": list(DEFAULT_KINDS),
            "description": "search: which parts of conversations to search. tool_output "
            "(everything tools printed) is left out unless asked for.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": DEFAULT_LIMIT,
            "description": "search: the most hits to return.",
        },
        "cursor": {
            "type": "string",
            "description": "search: nextCursor from the previous page of the same search.",
        },
        "sessionPath": {
            "type": "string",
            "description": "around and similar: the sessionPath of a hit.",
        },
        "messageIndex": {
            "type": "integer",
            "minimum": 0,
            "description": "around: the messageIndex of a hit.",
        },
        "before": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_CONTEXT,
            "default": DEFAULT_CONTEXT,
            "description": "around: how many messages before messageIndex.",
        },
        "after": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_CONTEXT,
            "default": DEFAULT_CONTEXT,
            "description": "around: how many messages after messageIndex.",
        },
        "agent": {
            "type": "string",
            "description": "search: only this agent's sessions, e.g. claude-code, codex, gemini.",
        },
        "project": {
            "type": "string",
            "description": "search: only sessions in this workspace: its path, a directory "
            "above it, or its last path component.",
        },
        "since": {
            "type": "string",
            "description": "search: only messages from then on: an ISO 8601 date or date-time, "
            "or relative like 30m, 12h, 7d, 2w, 6mo, 1y.",
        },
        "until": {
            "type": "string",
            "description": "search: only messages until then (a date includes that whole day).",
        },
        "sort": {
            "type": "string",
            "enum": list(SORTS),
            "default": "relevance",
            "description": "search: relevance, or by message time: newest or oldest first.",
        },
        "group": {
            "type": "boolean",
            "default": True,
            "description": "search: each session once, by its best hit with its best "
            "other moments (moreHits: how many more of it match); false: one hit per "
            "matching message part.",
        },
        "mode": {
            "type": "string",
            "enum": ["auto", "lexical", "hybrid"],
            "default": "auto",
            "description": "search: lexical (words), hybrid (words and meaning) or auto "
            "(hybrid when the catalog holds embeddings); the answer's mode says which ran.",
        },
    },
    "additionalProperties": False,
}


def tool_definition() -> dict[str, Any]:
    """The tool as agents see it in ``tools/list``: the contract the snapshot pins."""
    return {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "inputSchema": INPUT_SCHEMA}


def render(result: Any, progress: Progress) -> str:
    """JSON text, preceded by the progress line when the index is incomplete."""
    body = encode(result).decode("utf-8")
    note = progress_line(progress)
    return body if note is None else f"{note}\n{body}"


def _integer(args: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise QueryError(f"{name} must be an integer")
    if not low <= value <= high:
        raise QueryError(f"{name} must be between {low} and {high}")
    return value


def _string(args: Mapping[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise QueryError(f"{name} must be a string")
    return value


def _boolean(args: Mapping[str, Any], name: str, default: bool) -> bool:
    value = args.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise QueryError(f"{name} must be true or false")
    return value


class HistoryTool:
    """Answers tool calls through the history service; calls are serialized. With a
    ``hub``, a search asks it the same beside the local search (SPEC S6)."""

    def __init__(
        self, service: HistoryService, redact: bool = True, hub: HubSettings | None = None
    ) -> None:
        self.service = service
        self.lock = threading.Lock()
        self.redact = redact  # what reaches another program is redacted by default (X11)
        self.hub = hub

    def call(self, arguments: Mapping[str, Any] | None) -> str:
        """Run one call; bad arguments raise QueryError with a message safe to show."""
        args = dict(arguments or {})
        unknown = sorted(set(args) - set(INPUT_SCHEMA["properties"]))
        if unknown:
            raise QueryError(f"unknown argument: {unknown[0]}")
        operation = args.get("operation") or "search"
        if operation not in OPERATIONS:
            raise QueryError('operation must be "search", "around" or "similar"')
        run = {"search": self._search, "similar": self._similar, "around": self._around}
        with self.lock:
            return run[operation](args)

    def _similar(self, args: Mapping[str, Any]) -> str:
        found = similar_sessions(self.service, args, self.redact)
        return render(found, self.service.progress())

    def _search(self, args: Mapping[str, Any]) -> str:
        query = _string(args, "query")
        if not query:
            raise QueryError("search needs a query")
        kinds = args.get("kinds")
        if kinds is None:
            kinds = list(DEFAULT_KINDS)
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise QueryError("kinds must be a list of strings")
        if not kinds:
            raise QueryError("kinds must name at least one kind")
        limit = config.search_limit(args.get("limit"), DEFAULT_LIMIT)
        agent, project = _string(args, "agent"), _string(args, "project")
        request = SearchRequest(
            query=query,
            kinds=kinds,
            limit=limit,
            cursor=_string(args, "cursor"),
            sort=_string(args, "sort") or "relevance",
            agents=(agent,) if agent else (),
            projects=(project,) if project else (),
            since=_string(args, "since"),
            until=_string(args, "until"),
            group=_boolean(args, "group", True),
            mode=_string(args, "mode") or "auto",
        )
        question = HubQuestion(self.hub, request) if self.hub else None
        page = self.service.search(request)
        compact = HubCompactPage(
            hits=[compact_hit(hit, self.redact) for hit in page.hits],
            grouped=page.grouped,
            relaxed=page.relaxed,
            next_cursor=page.next_cursor,
            stale_cursor=page.stale_cursor,
            subagent_hits=page.subagent_hits,
            progress=None if page.progress.state == "complete" else page.progress,
            mode=page.mode,
            mode_note=page.mode_note,
            hub=compact_hub(question.answer(), self.redact) if question else None,
        )
        return render(compact, page.progress)

    def _around(self, args: Mapping[str, Any]) -> str:
        path = _string(args, "sessionPath")
        if not path:
            raise QueryError("around needs sessionPath")
        if args.get("messageIndex") is None:
            raise QueryError("around needs messageIndex")
        index = _integer(args, "messageIndex", 0, 0, 2**62)
        before = _integer(args, "before", DEFAULT_CONTEXT, 0, MAX_CONTEXT)
        after = _integer(args, "after", DEFAULT_CONTEXT, 0, MAX_CONTEXT)
        found = self.service.around(index, path=path, before=before, after=after)
        progress = self.service.progress()
        messages = to_builtins(found.messages)
        if self.redact:
            for message in messages:
                message["text"] = mask(message["text"])
        result = {
            "sessionPath": found.session_path,
            "messageIndex": index,
            "messages": messages,
            "progress": progress,
        }
        return render(result, progress)


# -- history_session ------------------------------------------------------------------

SESSION_TOOL_NAME: Final = "history_session"
SESSION_DEFAULT_LIMIT: Final = 10
SESSION_MAX_LIMIT: Final = 50
SESSION_DEFAULT_CHARS: Final = 2000
SESSION_MAX_CHARS: Final = 20_000
# The whole page's text: a model's context is not the place for a whole transcript.
SESSION_PAGE_CHARS: Final = 60_000

SESSION_TOOL_DESCRIPTION: Final = (
    "Read one past conversation, to follow a hit of history_search. Pass a hit's `ref` "
    "(`<sessionId>#<messageIndex>`) to read the messages around that message, or a session "
    "id or sessionPath to read the session from its start. Returns the session's title, "
    "agent, project and messageCount, and its messages in order (user and assistant text, "
    "tool calls and their results), each part cut to `maxChars`; when more follow, pass "
    "`nextStart` back as `start` to read on. The result is JSON."
)

SESSION_INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "ref": {
            "type": "string",
            "description": "A hit's ref (<sessionId>#<messageIndex>), a session id (or a "
            "unique prefix of 6+ characters), or a hit's sessionPath.",
        },
        "start": {
            "type": "integer",
            "minimum": 0,
            "description": "The message index to read from (nextStart of the previous page). "
            "Default: `before` messages before the ref's message, else the first.",
        },
        "before": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_CONTEXT,
            "default": DEFAULT_CONTEXT,
            "description": "With a ref's #N and no start: how many messages before it.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": SESSION_MAX_LIMIT,
            "default": SESSION_DEFAULT_LIMIT,
            "description": "The most messages to return.",
        },
        "maxChars": {
            "type": "integer",
            "minimum": 100,
            "maximum": SESSION_MAX_CHARS,
            "default": SESSION_DEFAULT_CHARS,
            "description": "Each part's text is cut to this many characters.",
        },
        "tools": {
            "type": "boolean",
            "default": True,
            "description": "Include tool calls and their results.",
        },
    },
    "required": ["ref"],
    "additionalProperties": False,
}


def session_tool_definition() -> dict[str, Any]:
    """``history_session`` as agents see it: the contract its snapshot pins."""
    return {
        "name": SESSION_TOOL_NAME,
        "description": SESSION_TOOL_DESCRIPTION,
        "inputSchema": SESSION_INPUT_SCHEMA,
    }


def clip(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: limit - 1] + "…", True


class SessionTool:
    """Answers ``history_session`` calls: one bounded page of one session."""

    def __init__(
        self, service: HistoryService, lock: threading.Lock | None = None, redact: bool = True
    ) -> None:
        self.service = service
        # Shared with history_search: without background indexing both use one connection.
        self._lock = lock or threading.Lock()
        self.redact = redact

    def call(self, arguments: Mapping[str, Any] | None) -> str:
        args = dict(arguments or {})
        unknown = sorted(set(args) - set(SESSION_INPUT_SCHEMA["properties"]))
        if unknown:
            raise QueryError(f"unknown argument: {unknown[0]}")
        ref = _string(args, "ref")
        if not ref:
            raise QueryError("history_session needs a ref")
        before = _integer(args, "before", DEFAULT_CONTEXT, 0, MAX_CONTEXT)
        limit = _integer(args, "limit", SESSION_DEFAULT_LIMIT, 1, SESSION_MAX_LIMIT)
        max_chars = _integer(args, "maxChars", SESSION_DEFAULT_CHARS, 100, SESSION_MAX_CHARS)
        start = None if args.get("start") is None else _integer(args, "start", 0, 0, 2**62)
        tools = args.get("tools", True)
        if not isinstance(tools, bool):
            raise QueryError("tools must be true or false")
        with self._lock:
            target = self.service.resolve(ref)
            document = self.service.document(target)
            progress = self.service.progress()
        entries = document.messages
        if start is not None:
            first = next((n for n, e in enumerate(entries) if e.message_index >= start), None)
        elif target.message_index is not None:
            at = next(
                (n for n, e in enumerate(entries) if e.message_index == target.message_index),
                None,
            )
            if at is None:
                raise QueryError(
                    f"message #{target.message_index} is not in the session's effective branch"
                )
            first = max(0, at - before)
        else:
            first = 0
        page: list[SessionEntry] = []
        clipped = False
        room = SESSION_PAGE_CHARS
        position = len(entries) if first is None else first
        while position < len(entries) and len(page) < limit:
            entry = entries[position]
            parts = []
            for part in entry.parts:
                if not tools and part.kind.startswith("tool_"):
                    continue
                shown = mask(part.text) if self.redact else part.text
                text, cut = clip(shown, min(max_chars, max(room, 100)))
                clipped = clipped or cut
                room -= len(text)
                parts.append(SessionPart(kind=part.kind, text=text, tool_name=part.tool_name))
            if page and room < 0:
                break  # the page is full: this message starts the next one
            page.append(
                SessionEntry(
                    message_index=entry.message_index,
                    role=entry.role,
                    created_at=entry.created_at,
                    parts=parts,
                )
            )
            position += 1
        window = SessionWindow(
            session_id=document.session_id,
            session_path=document.session_path,
            agent=document.agent,
            title=mask(document.title) if self.redact and document.title else document.title,
            project=document.project,
            message_count=document.message_count,
            messages=page,
            next_start=entries[position].message_index if position < len(entries) else None,
            clipped=clipped,
        )
        return render(window, progress)


def build_server(tool: HistoryTool, session_tool: SessionTool | None = None) -> Any:
    """An MCP server exposing the tools; blocking work runs in worker threads."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from convodex.mcp_memory import MemoryTools, definitions

    sessions = session_tool or SessionTool(tool.service, tool.lock, tool.redact)
    memory = MemoryTools(tool.service, tool.lock, tool.redact)
    handlers = {TOOL_NAME: tool.call, SESSION_TOOL_NAME: sessions.call, **memory.handlers()}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=TOOL_NAME, description=TOOL_DESCRIPTION, input_schema=INPUT_SCHEMA),
                types.Tool(
                    name=SESSION_TOOL_NAME,
                    description=SESSION_TOOL_DESCRIPTION,
                    input_schema=SESSION_INPUT_SCHEMA,
                ),
                *(
                    types.Tool(
                        name=d["name"], description=d["description"], input_schema=d["inputSchema"]
                    )
                    for d in definitions()
                ),
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        handler = handlers.get(params.name)
        if handler is None:
            return _error(f"unknown tool: {params.name}")
        try:
            text = await anyio.to_thread.run_sync(handler, params.arguments)
        except ConvodexError as exc:
            return _error(f"error: {exc}")
        return types.CallToolResult(content=[types.TextContent(text=text)])

    def _error(message: str) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)

    return Server(
        "convodex",
        version=_version(),
        instructions="history_search finds what was said in past agent conversations; "
        "history_session reads one of them around a hit; history_recent lists recent "
        "sessions, history_file the sessions that touched a file, history_error how an "
        "error was resolved before.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _version() -> str:
    try:
        return importlib.metadata.version("convodex")
    except importlib.metadata.PackageNotFoundError:
        return "0"


async def _serve(tool: HistoryTool) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_stdio(
    roots: list[Path],
    cache_dir: Path | None,
    *,
    scoped: bool,
    index: bool = True,
    follow_symlinks: bool = False,
    redact: bool = True,
    beside: Callable[[HistoryService], Callable[[], None]] | None = None,
    hub: HubSettings | None = None,
) -> None:
    """Serve until the client closes stdin. ``scoped`` limits searches to ``roots``;
    ``beside`` starts what serves beside it (the CLI's warm service) and returns its stop;
    ``hub`` is the team hub searches ask too.

    With ``index``, the process-local scheduler keeps the catalog current (a first
    scan, then periodic rescans), so calls never wait for a scan.
    """
    background = Background(rescan_seconds=RESCAN_SECONDS, listen_for_hints=False)
    with HistoryService.open(
        cache_dir, roots, scoped=scoped, background=background, follow_symlinks=follow_symlinks
    ) as service:
        if index:
            service.start()
        # Short commands of the same user and catalog ask this process (SPEC L20).
        stop_beside = beside(service) if index and beside is not None else None
        try:
            anyio.run(_serve, HistoryTool(service, redact, hub))
        finally:
            if stop_beside is not None:
                stop_beside()
