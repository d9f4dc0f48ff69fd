"""Back to work from a hit (SPEC L15): the session's own agent, or another one.

The commands come from templates (``catalog/commands.py``: each format's documented
``resume``, overridable in the ``[resume]`` table of the user config file). A hand-off
starts another agent with a brief of the session as its first prompt, the way that
agent documents taking one (its format's ``handoff``, overridable in ``[handoff]``),
filled the same way. This module runs them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from convodex import config
from convodex.catalog.commands import (
    RESUME_PLACEHOLDERS,
    fill,
    label,
    overrides,
    resume_template,
    shell_line,
)
from convodex.catalog.plan import agent_name
from convodex.errors import InvalidInput

HANDOFF_PLACEHOLDERS = ("prompt", "file", "cwd")


@dataclass(frozen=True, slots=True)
class Launch:
    """A command to run in a directory: what ``resume`` execs or ``--print`` shows."""

    argv: list[str]
    cwd: str
    agent: str
    # The session's recorded workspace; None when unknown (it then runs right here).
    workspace: str | None = None

    def shell(self) -> str:
        """The one line people paste: ``cd DIR && COMMAND``, every word quoted."""
        return shell_line(self.argv, self.workspace)


def built_in_handoffs() -> dict[str, str]:
    """Each format's documented way of starting with a first prompt, where it has one."""
    from convodex.sources.registry import FORMATS

    found = {name: fmt.handoff for name, fmt in FORMATS.items()}
    return {name: template for name, template in found.items() if template}


def resume_argv(agent: str, session_id: str, cwd: str | None) -> list[str]:
    """The argv that reopens a session; a clear error when the agent has no command."""
    template = resume_template(agent)
    if template is None:
        raise InvalidInput(
            f"{label(agent)} has no resume command from a shell; set one in the [resume] "
            f"table of {config.config_file()}"
        )
    from convodex.sources.registry import FORMATS

    resumed = FORMATS[agent].resume_id(session_id) if agent in FORMATS else session_id
    if resumed is None:
        raise InvalidInput(f"a {label(agent)} sub-agent's session cannot be resumed on its own")
    values = {"id": resumed, "cwd": cwd or "."}
    return fill(template, values, RESUME_PLACEHOLDERS, f"the {label(agent)} resume command")


def resume_launch(agent: str, session_id: str, cwd: str | None) -> Launch:
    """What ``convodex resume`` runs: the agent's command in the session's workspace."""
    return Launch(resume_argv(agent, session_id, cwd), cwd or os.getcwd(), agent, cwd)


def handoff_agent(value: str) -> str:
    """An ``--in`` agent name, checked against the agents that can take a first prompt."""
    name = agent_name(value)
    templates = {**built_in_handoffs(), **overrides("handoff")}
    if name not in templates:
        able = ", ".join(sorted(label(a) for a in templates))
        raise InvalidInput(
            f"cannot hand a session to {value!r}: no known way to start it with a prompt "
            f"(agents that can: {able}; others can be added in the [handoff] table of "
            f"{config.config_file()})"
        )
    return name


# Agents whose built-in hand-off names the brief's file instead of carrying the brief:
# each reads a file it is pointed at (asking first where it asks for files outside the
# workspace). A command line is visible to every local user (``ps``), a private file is
# not. Gemini CLI and Qwen Code read only inside the workspace: they get the brief.
READS_THE_FILE = frozenset(
    {"claude_code", "codex", "copilot_cli", "cursor", "droid", "opencode", "pi"}
)


def pointer(brief_path: Path) -> str:
    """The first prompt that hands a brief over by its file."""
    return (
        f"Read the hand-off brief in {brief_path} (a Markdown summary of an earlier "
        "session) and continue that work from where it stopped."
    )


def handoff_launch(agent: str, brief: str, brief_path: Path, cwd: str | None) -> Launch:
    """The chosen agent started in the workspace with the brief as its first prompt:
    by its file where the agent reads one (``READS_THE_FILE``), else the brief itself;
    a ``[handoff]`` template of the config file gets the brief as ``{prompt}``."""
    name = handoff_agent(agent)
    handoffs = overrides("handoff")
    template = {**built_in_handoffs(), **handoffs}[name]
    workspace = cwd or os.getcwd()
    prompt = brief if name in handoffs or name not in READS_THE_FILE else pointer(brief_path)
    values = {"prompt": prompt, "file": str(brief_path), "cwd": workspace}
    argv = fill(template, values, HANDOFF_PLACEHOLDERS, f"the {label(name)} hand-off command")
    return Launch(argv, workspace, name, cwd)


def check(launch: Launch) -> str:
    """The executable's full path; a clear error when it or the directory is missing."""
    import shutil  # 2 ms (bz2, lzma): a search shows resume commands, only resume runs them

    executable = shutil.which(launch.argv[0])
    if executable is None:
        raise InvalidInput(
            f"{launch.argv[0]} (the {label(launch.agent)} command) is not installed or not on PATH"
        )
    if not os.path.isdir(launch.cwd):
        raise InvalidInput(f"the session's workspace {launch.cwd} is not a directory any more")
    return executable


def execute(launch: Launch) -> NoReturn:
    """Hand the terminal over: this process becomes the agent, in the workspace."""
    executable = check(launch)
    os.chdir(launch.cwd)
    os.execv(executable, launch.argv)
