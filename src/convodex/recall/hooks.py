"""Each agent's hook contract for recall: what its hook sends on stdin and what it
reads back on stdout (SPEC L18; the documentation each follows is in docs/agents.md).

Claude Code, Gemini CLI and Qwen Code send one JSON object (``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name`` and, before a prompt, ``prompt``)
and read ``{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}``.
"""

from __future__ import annotations

import json
from typing import Final

import msgspec

from convodex.errors import QueryError
from convodex.recall.core import Prompt

# agent -> the events whose output carries additionalContext, and which carry a prompt.
PROMPT_EVENTS: Final[dict[str, frozenset[str]]] = {
    "claude-code": frozenset({"UserPromptSubmit"}),
    "gemini": frozenset({"BeforeAgent"}),
    "qwen": frozenset({"UserPromptSubmit"}),
}
START_EVENTS: Final[dict[str, frozenset[str]]] = {
    "claude-code": frozenset({"SessionStart"}),
    "gemini": frozenset({"SessionStart"}),
    "qwen": frozenset({"SessionStart"}),
}
HOOK_AGENTS: Final = tuple(PROMPT_EVENTS)


class HookInput(msgspec.Struct, frozen=True):
    """The fields recall reads; agents send more, which is ignored."""

    hook_event_name: str = ""
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    prompt: str | None = None


class Hook(msgspec.Struct, frozen=True):
    agent: str
    event: str
    prompt: Prompt


def parse(agent: str, raw: bytes) -> Hook:
    """The hook's stdin for ``agent``; anything else is a QueryError (never shown)."""
    if agent not in PROMPT_EVENTS:
        raise QueryError(f"recall has no hook contract for {agent}")
    try:
        data = msgspec.json.decode(raw, type=HookInput)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise QueryError("the hook input is not the JSON object this agent sends") from exc
    prompt = Prompt(
        text=data.prompt or "",
        cwd=data.cwd,
        session_id=data.session_id,
        transcript_path=data.transcript_path,
    )
    return Hook(agent=agent, event=data.hook_event_name, prompt=prompt)


def wants_prompt(hook: Hook) -> bool:
    return hook.event in PROMPT_EVENTS[hook.agent]


def output(hook: Hook, context: str) -> str:
    """The stdout the agent reads: the documented shape with the block as context."""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": hook.event, "additionalContext": context}},
        ensure_ascii=False,
    )
