"""Mistral Vibe sessions: ``~/.vibe/logs/session/<session dir>/messages.jsonl``.

``$VIBE_HOME/logs/session`` on every OS. Each session directory holds
``messages.jsonl`` (OpenAI-style messages, one a line: ``role`` user, assistant or
tool, ``content``, ``tool_calls`` with ``function.arguments`` as a string or an
object, ``tool_call_id`` and ``name`` on results; no times) and ``meta.json``
(``session_id``, ``parent_session_id`` for a ``/new``-style fork, ``start_time``,
``title``, ``environment.working_directory``). A sub-agent's trace sits in its
parent's ``agents/`` folder with the same pair. The messages are the native log's
shape, so the native reader reads them; Vibe's own sidecar gives the facts.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from convodex.sources.base import SessionInfo, Support
from convodex.sources.claude_info import parse_time
from convodex.sources.session_log import SessionLogFormat

NAME = "mistral_vibe"
MESSAGES = "messages.jsonl"
META = "meta.json"


class _Environment(msgspec.Struct):
    working_directory: str | None = None


class _Meta(msgspec.Struct):
    session_id: str | None = None
    parent_session_id: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    title: str | None = None
    environment: _Environment | None = None


_decode_meta = msgspec.json.Decoder(_Meta).decode


class VibeFormat(SessionLogFormat):
    """Reader for Mistral Vibe sessions (the native log's messages, Vibe's sidecar)."""

    name = NAME
    support = Support(
        agent="Mistral Vibe",
        versions="2.x",
        where="`~/.vibe/logs/session/<session>/` (`$VIBE_HOME`), every OS",
        branches="linear (a `/new` fork is a session of its own, naming its parent)",
        subagents="traces in the parent's `agents/` folder",
        gaps="no per-message times (the session's start and end only)",
    )
    resume: str | None = "vibe --resume {id}"
    handoff: str | None = None
    source_names = frozenset({MESSAGES})

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """``messages.jsonl`` beside Vibe's ``meta.json``, anywhere."""
        if path.name != MESSAGES:
            return False if fixed else None
        beside = (path.parent / META).is_file() or path.parent.parent.name == "agents"
        return fixed or beside or None

    def info(self, path: Path) -> SessionInfo:
        folder = path.parent
        info = SessionInfo(session_id=folder.name, workspace_root=None)
        try:
            meta = _decode_meta((folder / META).read_bytes())
        except (OSError, msgspec.DecodeError):
            meta = _Meta()
        info.session_id = meta.session_id or folder.name
        info.title = meta.title
        info.parent_id = meta.parent_session_id
        info.created_at = parse_time(meta.start_time)
        info.updated_at = parse_time(meta.end_time)
        if meta.environment is not None:
            info.workspace_root = meta.environment.working_directory
        if folder.parent.name == "agents":  # a sub-agent's trace in its parent's folder
            info.subagent = True
            info.parent_id = info.parent_id or folder.parent.parent.name
        return info


FORMAT = VibeFormat()
