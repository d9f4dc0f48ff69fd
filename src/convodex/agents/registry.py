"""Every agent convodex can wire, by name (the names ``convodex install`` takes)."""

from __future__ import annotations

from convodex.agents import claude_code, cline, codex, copilot, cursor, gemini, opencode, qwen
from convodex.agents.spec import Agent

AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        claude_code.AGENT,
        codex.AGENT,
        gemini.AGENT,
        cursor.AGENT,
        opencode.AGENT,
        copilot.AGENT,
        qwen.AGENT,
        cline.AGENT,
    )
}
ALIASES = {"claude": "claude-code", "gemini-cli": "gemini", "qwen-code": "qwen"}
