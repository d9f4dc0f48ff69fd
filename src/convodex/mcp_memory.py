"""The memory tools an agent can use on its own over MCP (SPEC L18): recent sessions,
the sessions that touched a file, and how an error was resolved before.

Like ``history_search`` and ``history_session`` (``convodex.mcp``), each tool's name,
description and schema are a contract agents are prompted with, pinned by snapshots;
answers are compact JSON (no null or false fields), redacted unless the server was
started with ``--no-redact``. Nothing here talks SQL: every answer comes from the
history service's search, around and tree calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from convodex.catalog.plan import SearchRequest
from convodex.catalog.progress import progress_sentence
from convodex.catalog.service import HistoryService
from convodex.config import MAX_SEARCH_LIMIT, search_limit
from convodex.errors import QueryError
from convodex.models import Hit, Progress, encode
from convodex.text.redact import redact as mask
from convodex.text.tokens import tokenize

RECENT_TOOL: Final = "history_recent"
FILE_TOOL: Final = "history_file"
ERROR_TOOL: Final = "history_error"
TEXT_CHARS: Final = 300

_PROJECT = {
    "type": "string",
    "description": "Only sessions in this workspace: its path, a directory above it, or its "
    "last path component.",
}
_AGENT = {
    "type": "string",
    "description": "Only this agent's sessions, e.g. claude-code, codex, gemini.",
}
_SINCE = {
    "type": "string",
    "description": "Only from then on: an ISO 8601 date or date-time, or relative like 12h, "
    "7d, 2w.",
}

RECENT_DESCRIPTION: Final = (
    "List past agent sessions on this machine, newest first: what was worked on lately, "
    "optionally only in one `project`, by one `agent` or `since` a time. Each session has "
    "its `ref` (for history_session), title, agent, project, last activity and message "
    "count; pass `nextStart` back as `start` for more. The result is JSON."
)
RECENT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "project": _PROJECT,
        "agent": _AGENT,
        "since": _SINCE,
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "start": {"type": "integer", "minimum": 0, "default": 0},
    },
    "additionalProperties": False,
}

FILE_DESCRIPTION: Final = (
    "Find past sessions that touched a file: tool calls whose arguments name it (reads, "
    "edits, writes, shell commands) and messages that mention it. `path` may be absolute or "
    "relative; its last parts are matched. Returns sessions newest first, each with its "
    "moments (ref, kind, tool, a short snippet). The result is JSON."
)
FILE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file, e.g. src/app/models.py."},
        "project": _PROJECT,
        "agent": _AGENT,
        "since": _SINCE,
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
    },
    "required": ["path"],
    "additionalProperties": False,
}

ERROR_DESCRIPTION: Final = (
    "How was this error resolved before? Pass the error text (a message, an exception "
    "line). Finds past tool errors that share its words and returns, for each, what "
    "followed in that session: the next assistant turns and tool calls in order, with "
    "refs to read more with history_session. The result is JSON."
)
ERROR_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "error": {"type": "string", "description": "The error's text."},
        "project": _PROJECT,
        "agent": _AGENT,
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
        "after": {
            "type": "integer",
            "minimum": 1,
            "maximum": 10,
            "default": 6,
            "description": "How many messages that followed each error to return.",
        },
    },
    "required": ["error"],
    "additionalProperties": False,
}

DEFINITIONS: Final = (
    (RECENT_TOOL, RECENT_DESCRIPTION, RECENT_SCHEMA),
    (FILE_TOOL, FILE_DESCRIPTION, FILE_SCHEMA),
    (ERROR_TOOL, ERROR_DESCRIPTION, ERROR_SCHEMA),
)


def definitions() -> list[dict[str, Any]]:
    """The tools as agents see them in ``tools/list``: the contracts the snapshots pin."""
    return [
        {"name": name, "description": text, "inputSchema": schema}
        for name, text, schema in DEFINITIONS
    ]


# -- shared with convodex.mcp (which imports them from here: one direction) --------


def progress_line(progress: Progress) -> str | None:
    """The first line of a result whose index is not complete (or holds nothing), or
    that the bundled demo is in the answers, else None: the library's sentences."""
    from convodex.catalog.demo import note, sentence

    if progress.state == "complete" and progress.total > 0:
        return note(progress)
    return sentence(progress, progress_sentence(progress))


def iso_time(epoch_ms: int | None) -> str | None:
    if epoch_ms is None:
        return None
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(epoch_ms / 1000, UTC).isoformat(timespec="seconds")
    return moment.replace("+00:00", "Z")


def _args(arguments: Mapping[str, Any] | None, schema: dict[str, Any]) -> dict[str, Any]:
    args = dict(arguments or {})
    unknown = sorted(set(args) - set(schema["properties"]))
    if unknown:
        raise QueryError(f"unknown argument: {unknown[0]}")
    for name in schema.get("required", []):
        value = args.get(name)
        if not isinstance(value, str) or not value.strip():
            raise QueryError(f"{name} is required (a non-empty string)")
    for name, spec in schema["properties"].items():
        value = args.get(name)
        if value is None:
            if "default" in spec:
                args[name] = spec["default"]
            continue
        if spec["type"] == "string" and not isinstance(value, str):
            raise QueryError(f"{name} must be a string")
        if spec["type"] == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise QueryError(f"{name} must be an integer")
            low, high = spec.get("minimum", 0), spec.get("maximum", 2**62)
            if not low <= value <= high:
                raise QueryError(f"{name} must be between {low} and {high}")
    return args


def _one_line(text: str, limit: int = TEXT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _compact(value: Any) -> Any:
    """No null or false fields: what an agent's context needs and nothing else."""
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items() if v is not None and v is not False}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


class MemoryTools:
    """Answers the memory tools through the history service; calls are serialized."""

    def __init__(
        self, service: HistoryService, lock: threading.Lock | None = None, redact: bool = True
    ) -> None:
        self.service = service
        self.lock = lock or threading.Lock()
        self.redact = redact

    def handlers(self) -> dict[str, Callable[[Mapping[str, Any] | None], str]]:
        return {RECENT_TOOL: self.recent, FILE_TOOL: self.file, ERROR_TOOL: self.error}

    def _text(self, text: str | None, limit: int = TEXT_CHARS) -> str | None:
        if text is None:
            return None
        return _one_line(mask(text) if self.redact else text, limit)

    def _render(self, body: dict[str, Any], progress: Progress) -> str:
        if progress.state != "complete":
            body["progress"] = progress
        text = encode(_compact(body)).decode("utf-8")
        note = progress_line(progress)
        return text if note is None else f"{note}\n{text}"

    # -- history_recent -------------------------------------------------------------

    def recent(self, arguments: Mapping[str, Any] | None) -> str:
        args = _args(arguments, RECENT_SCHEMA)
        start, limit = args["start"], args["limit"]
        if start + limit > MAX_SEARCH_LIMIT:
            raise QueryError(f"start + limit must be at most {MAX_SEARCH_LIMIT}")
        request = SearchRequest(
            # One more says whether another page follows (the cursor says it at the cap).
            limit=min(start + limit + 1, MAX_SEARCH_LIMIT),
            group=False,
            agents=(args["agent"],) if args.get("agent") else (),
            projects=(args["project"],) if args.get("project") else (),
            since=args.get("since"),
        )
        with self.lock:
            listing = self.service.recent(request)  # the catalog's own newest-first list
        rows = listing.sessions
        sessions = [
            {
                "ref": row.ref,
                "title": self._text(row.session_title, 100),
                "agent": row.agent.replace("_", "-"),
                "project": row.project,
                "lastAt": iso_time(row.last_activity_at),
                "messages": row.message_count,
            }
            for row in rows[start : start + limit]
        ]
        more = len(rows) > start + limit or listing.next_cursor is not None
        body = {"sessions": sessions, "nextStart": start + limit if more else None}
        return self._render(body, listing.progress)

    # -- history_file ---------------------------------------------------------------

    def file(self, arguments: Mapping[str, Any] | None) -> str:
        args = _args(arguments, FILE_SCHEMA)
        parts = [p for p in args["path"].replace("\\", "/").split("/") if p and p != "."]
        tail = parts[-2:] if len(parts) > 1 else parts
        tokens = tokenize(" ".join(tail))
        if not tokens:
            raise QueryError("path must contain at least one letter or number")
        name = tail[-1].lower()
        request = SearchRequest(
            query='"' + " ".join(tokens) + '"',
            kinds=["tool_input", "user_text", "assistant_text", "tool_error"],
            limit=120,
            group=False,
            sort="newest",
            agents=(args["agent"],) if args.get("agent") else (),
            projects=(args["project"],) if args.get("project") else (),
            since=args.get("since"),
        )
        with self.lock:
            page = self.service.search(request)
        sessions: dict[str, dict[str, Any]] = {}
        for hit in page.hits:
            if name not in hit.snippet.lower():
                continue  # the words matched, the file name did not
            entry = sessions.get(hit.session_id)
            if entry is None:
                if len(sessions) == args["limit"]:
                    continue
                entry = sessions[hit.session_id] = self._session(hit)
            if len(entry["moments"]) < 5:
                entry["moments"].append(
                    {
                        "ref": hit.ref,
                        "kind": hit.kind,
                        "tool": hit.tool_name,
                        "snippet": self._text(hit.snippet, 160),
                        "at": iso_time(hit.message_at),
                    }
                )
        return self._render({"sessions": list(sessions.values())}, page.progress)

    def _session(self, hit: Hit) -> dict[str, Any]:
        return {
            "ref": hit.session_id,
            "title": self._text(hit.session_title or hit.session_id, 100),
            "agent": hit.agent.replace("_", "-"),
            "project": hit.project,
            "lastAt": iso_time(hit.last_activity_at),
            "moments": [],
        }

    # -- history_error --------------------------------------------------------------

    def error(self, arguments: Mapping[str, Any] | None) -> str:
        from convodex.recall.core import keywords, needed

        args = _args(arguments, ERROR_SCHEMA)
        words = keywords(args["error"])
        if not words:
            raise QueryError("error must contain at least one word to look for")
        request = SearchRequest(
            query=" OR ".join(words),
            kinds=["tool_error"],
            limit=40,
            group=False,
            around=1,
            agents=(args["agent"],) if args.get("agent") else (),
            projects=(args["project"],) if args.get("project") else (),
        )
        with self.lock:
            page = self.service.search(request)
            found: dict[str, Hit] = {}
            for hit in page.hits:
                own = [m.text for m in hit.around if m.hit] if isinstance(hit.around, list) else []
                shared = set(words) & set(tokenize(own[0] if own else hit.snippet))
                if len(shared) < min(needed(len(words)), len(words)):
                    continue
                if hit.session_id not in found:
                    found[hit.session_id] = hit
                if len(found) == args["limit"]:
                    break
            results = [self._resolution(hit, args["after"]) for hit in found.values()]
        return self._render({"errors": results}, page.progress)

    def _resolution(self, hit: Hit, after: int) -> dict[str, Any]:
        context = self.service.around(
            hit.message_index, path=hit.session_path, before=0, after=after
        )
        then = [
            {
                "ref": f"{hit.session_id}#{m.message_index}",
                "role": m.role,
                "text": self._text(m.text),
            }
            for m in context.messages
            if m.message_index > hit.message_index
        ]
        return {
            "error": {
                "ref": hit.ref,
                "tool": hit.tool_name,
                "text": self._text(hit.snippet, 200),
                "at": iso_time(hit.message_at),
            },
            "session": self._session(hit) | {"moments": None},
            "then": then,
        }


def similar_sessions(
    service: HistoryService, args: Mapping[str, Any], redact: bool
) -> dict[str, Any]:
    """The history tool's ``similar`` operation (L19): the sessions most like the one
    at ``sessionPath``, compact, titles redacted unless asked not to."""
    path, mode = args.get("sessionPath"), args.get("mode") or "auto"
    if not isinstance(path, str) or not path:
        raise QueryError("similar needs sessionPath")
    if not isinstance(mode, str):
        raise QueryError("mode must be auto, lexical or hybrid")
    found = service.similar(path, search_limit(args.get("limit"), 10), mode)
    return {
        "sessions": [
            {
                "ref": s.ref,
                "sessionPath": s.session_path,
                "title": mask(s.session_title) if redact else s.session_title,
                "agent": s.agent,
                "similarity": s.similarity,
            }
            for s in found.sessions
        ],
        "mode": found.mode,
    }
