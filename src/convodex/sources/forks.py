"""Agents that write another agent's format: the same reader under their own name.

- TRAE CLI 2.0 (``traecli``, a Codex fork): Codex rollouts field for field in
  ``~/.trae/cli/sessions/YYYY/MM/DD/rollout-*.jsonl`` (archived under
  ``archived_sessions``); its ``session_meta`` says ``"model_provider": "trae"``.
  Sub-agents are their own rollouts (``source.subagent.thread_spawn``).
- iFlow CLI: Claude Code's records (``uuid``/``parentUuid`` tree, ``isSidechain``)
  in ``~/.iflow/projects/<project>/session-<uuid>.jsonl``; its session ids carry
  the ``session-`` prefix. Several assistant records under one parent are streamed
  parts of one answer, as Claude Code's are.
- OpenClaw: Pi's version 3 entries (``id``/``parentId`` tree) in
  ``~/.openclaw/agents/<agent>/sessions/<id>.jsonl`` (legacy ``~/.clawdbot``,
  ``~/.moltbot``); checkpoints and trajectories beside them are not sessions.

Detection tells each from the agent it forked by content where the content says so
(TRAE's provider, iFlow's session ids) and by place otherwise (OpenClaw's layout).
"""

from __future__ import annotations

from pathlib import Path

from convodex.sources.base import SourceFormat, Support
from convodex.sources.claude_code import ClaudeCodeFormat
from convodex.sources.codex import CodexFormat
from convodex.sources.pi import PiFormat

TRAE = "trae"
IFLOW = "iflow"
OPENCLAW = "openclaw"
IFLOW_PREFIX = "session-"
# OpenClaw files beside its sessions that are not sessions.
OPENCLAW_NOT_SESSIONS = (".checkpoint.", ".trajectory.")


class TraeFormat(CodexFormat):
    """TRAE CLI rollouts (Codex's format)."""

    name = TRAE
    support = Support(
        agent="TRAE CLI 2.0",
        versions="traecli 0.200",
        where="`~/.trae/cli/sessions`, `~/.trae/cli/archived_sessions`, every OS",
        branches="as Codex: rollbacks remove their turns",
        subagents="child rollouts (`source.subagent`)",
        gaps="TRAE IDE (`state.vscdb`, partly encrypted): no sample",
    )
    resume: str | None = "traex resume {id}"
    handoff: str | None = None


class IflowFormat(ClaudeCodeFormat):
    """iFlow CLI sessions (Claude Code's records)."""

    name = IFLOW
    support = Support(
        agent="iFlow CLI",
        versions="1.0",
        where="`~/.iflow/projects/<project>/`, every OS",
        branches="linear: siblings are the streamed parts of one answer",
        subagents="in-file sidechains, apart",
    )
    # iFlow documents ``--resume`` (a list of the project's sessions to pick from)
    # and ``--continue``, not a flag that takes a session id.
    resume: str | None = "iflow --resume"
    handoff: str | None = None
    linear = True  # siblings are streamed parts of one answer, not forks


class OpenClawFormat(PiFormat):
    """OpenClaw sessions (Pi's entries), known by their place."""

    name = OPENCLAW
    support = Support(
        agent="OpenClaw",
        versions="session v3",
        where=(
            "`~/.openclaw/agents/<agent>/sessions/` (`$OPENCLAW_STATE_DIR`), "
            "legacy `~/.clawdbot`, `~/.moltbot`"
        ),
        branches="as Pi: the chain to the entry written last (results under their call)",
        subagents="—",
        gaps="the `sessions.json` index's keys are not shown",
    )
    resume: str | None = None  # sessions continue through the gateway, not a shell
    handoff: str | None = None
    source_dirs = frozenset({"agents"})

    def claims(self, path: Path, fixed: bool) -> bool | None:
        name = path.name
        if not name.endswith(".jsonl") or any(m in name for m in OPENCLAW_NOT_SESSIONS):
            return False if fixed else None
        in_sessions = path.parent.name == "sessions" and path.parent.parent.parent.name == "agents"
        return True if fixed else (in_sessions or None)


FORMATS: dict[str, SourceFormat] = {
    TRAE: TraeFormat(),
    IFLOW: IflowFormat(),
    OPENCLAW: OpenClawFormat(),
}
