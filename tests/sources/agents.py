"""What every newly read agent must show, checked the same way for each (the tests of
each agent give its samples, where its agent writes them, and what a user finds)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from convodex.text.agents import agent_label
from helpers import CliRun, as_json, hits


@dataclass(frozen=True)
class Placed:
    """A public sample copied to where its agent writes it (relative to the agent's
    default root, or to a ``--root`` directory)."""

    sample: Path  # a file or a directory under tests/fixtures
    where: str  # its path under the root


@dataclass(frozen=True)
class Agent:
    name: str
    root: str  # the default root, relative to the home directory
    placed: list[Placed]
    # (kind, word): each word is found as a hit of this agent of that kind.
    said: list[tuple[str, str]]
    resume: str | None  # what ``resume --print`` gives for ``session`` (None: no command)
    session: str  # a session id of the samples
    subagent_word: str | None = None  # found only with --include-subagents


def place(agent: Agent, root: Path) -> None:
    for item in agent.placed:
        target = root / item.where
        target.parent.mkdir(parents=True, exist_ok=True)
        if item.sample.is_dir():
            shutil.copytree(item.sample, target)
        else:
            shutil.copy(item.sample, target)


# The role a hit of each kind has.
ROLE_OF = {
    "user_text": "user",
    "assistant_text": "assistant",
    "tool_input": "assistant",
    "tool_output": "tool",
    "tool_error": "tool",
}


def check_found(agent: Agent, cli: CliRun) -> None:
    """Every word said is a hit of the agent, of its kind and role; sub-agents only on
    request."""
    for kind, word in agent.said:
        found = hits(cli, word, "--include-subagents", "--kind", kind)
        assert found, (agent.name, kind, word)
        shown = agent_label(agent.name)  # every surface spells it with hyphens
        assert {(h["agent"], h["role"]) for h in found} == {(shown, ROLE_OF[kind])}, word
    if agent.subagent_word is not None:
        assert hits(cli, agent.subagent_word) == []
        assert hits(cli, agent.subagent_word, "--include-subagents")


def check_default_root(agent: Agent, cli: CliRun) -> None:
    place(agent, Path.home() / agent.root)
    out = as_json(cli("index", "--json"))
    assert out["stats"]["failed"] == 0
    check_found(agent, cli)
    result = cli("resume", agent.session, "--print")
    if agent.resume is None:
        assert result.exit_code == 1 and "has no resume command" in result.stderr
    else:
        assert result.exit_code == 0, result.output
        assert result.stdout.strip().endswith(agent.resume), result.stdout


def check_any_root(agent: Agent, tmp_path: Path, cli: CliRun) -> None:
    """Under ``--root DIR`` with no format the agent is found by content or layout."""
    root = tmp_path / "copied-elsewhere"
    place(agent, root)
    out = as_json(cli("index", "--root", str(root), "--json"))
    assert out["stats"]["failed"] == 0
    check_found(agent, cli)
