"""Back to work from a hit (SPEC L15): the session's own agent, or another one.

Resume commands are each format's documented ``resume`` template (``FORMATS[name]``),
overridable per agent in the ``[resume]`` table of the user config file. A hand-off
starts another agent with a brief of the session as its first prompt, the way that
agent documents taking one (its format's ``handoff``, overridable in ``[handoff]``). Templates are
split like a shell would split them *before* the placeholders are filled, so an id,
a path or a brief with spaces or quotes stays one argument and never becomes shell
syntax; the one-line form people copy is ``shlex``-quoted.
"""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from convodex import config
from convodex.catalog.plan import agent_name
from convodex.errors import ConfigError, InvalidInput

RESUME_PLACEHOLDERS = ("id", "cwd")
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


def shell_line(argv: list[str], cwd: str | None) -> str:
    command = shlex.join(argv)
    return f"cd {shlex.quote(cwd)} && {command}" if cwd else command


def label(agent: str) -> str:
    return agent.replace("_", "-")


def _known_agents() -> set[str]:
    from convodex.sources.registry import FORMATS

    return set(FORMATS)


def _overrides(table: str) -> dict[str, str]:
    """A config table keyed by agent name (hyphens or underscores), names checked."""
    out: dict[str, str] = {}
    known = _known_agents()
    for key, template in config.config_table(table).items():
        name = agent_name(key)
        if name not in known:
            raise ConfigError(
                f"{config.config_file()}: [{table}] names an unknown agent {key!r} "
                f"(known: {', '.join(sorted(label(a) for a in known))})"
            )
        out[name] = template
    return out


def resume_template(agent: str) -> str | None:
    """The agent's resume template: the config file's, else its format's, else None."""
    name = agent_name(agent)
    override = _overrides("resume").get(name)
    if override is not None:
        return override
    return Templates()[name]


def built_in_handoffs() -> dict[str, str]:
    """Each format's documented way of starting with a first prompt, where it has one."""
    from convodex.sources.registry import FORMATS

    found = {name: fmt.handoff for name, fmt in FORMATS.items()}
    return {name: template for name, template in found.items() if template}


class Templates(dict[str, str | None]):
    """Resume templates by agent name. An agent the config file does not name gets its
    format's documented template (None where it has none), read from that format when
    first asked for: a search imports only its hits' readers, not every reader."""

    def __missing__(self, agent: str) -> str | None:
        from convodex.sources.registry import FORMATS

        fmt = FORMATS.get(agent)
        template = self[agent] = fmt.resume if fmt is not None else None
        return template


def built_in_templates() -> Templates:
    """Each format's documented resume template (None where the agent has none)."""
    return Templates()


def resume_templates() -> Templates:
    """Every agent's template at once (a search fills many hits from one read)."""
    found = built_in_templates()
    found.update(_overrides("resume"))
    return found


@functools.lru_cache(maxsize=64)
def _words(template: str) -> tuple[str, ...]:
    """A template's words, split once (a page of hits fills the same few templates)."""
    return tuple(shlex.split(template))


def fill(
    template: str, values: Mapping[str, str], allowed: tuple[str, ...], where: str
) -> list[str]:
    """``template`` split into words, then each word's placeholders filled."""
    try:
        words = _words(template)
    except ValueError as exc:
        raise ConfigError(f"{where}: cannot split the command ({exc})") from exc
    if not words:
        raise ConfigError(f"{where}: the command is empty")
    out = []
    for word in words:
        try:
            out.append(word.format_map(values))
        except (KeyError, ValueError, IndexError, AttributeError) as exc:
            names = ", ".join("{" + n + "}" for n in allowed)
            raise ConfigError(f"{where}: a template may use only {names}") from exc
    return out


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


def resume_command(
    agent: str, session_id: str, cwd: str | None, templates: Mapping[str, str | None] | None = None
) -> str | None:
    """The copyable one-line resume command, or None when the agent documents none."""
    from convodex.sources.registry import FORMATS

    chosen = templates if templates is not None else resume_templates()
    template = chosen[agent] if isinstance(chosen, Templates) else chosen.get(agent)
    resumed = FORMATS[agent].resume_id(session_id) if agent in FORMATS else session_id
    if template is None or resumed is None:
        return None
    return _command_line(template, agent, resumed, cwd)


@functools.lru_cache(maxsize=4096)
def _command_line(template: str, agent: str, session_id: str, cwd: str | None) -> str:
    """A template filled and quoted into one line, kept by everything it depends on: a
    warm process (serve, the picker) shows the same sessions' commands search after
    search, and quoting them took a tenth of a page's hydration."""
    values = {"id": session_id, "cwd": cwd or "."}
    argv = fill(template, values, RESUME_PLACEHOLDERS, f"the {label(agent)} resume command")
    return shell_line(argv, cwd)


def usable_templates() -> Mapping[str, str | None]:
    """Every agent's template; with a broken config file, the agents' own commands
    (showing a session or a hit never fails on it; ``convodex resume`` reports it)."""
    try:
        return resume_templates()
    except ConfigError:
        return built_in_templates()


def shown_resume_command(
    agent: str, session_id: str, cwd: str | None, templates: Mapping[str, str | None]
) -> str | None:
    """``resume_command`` for a hit or a session view: None instead of a config error."""
    try:
        return resume_command(agent, session_id, cwd, templates)
    except ConfigError:
        return None


def resume_launch(agent: str, session_id: str, cwd: str | None) -> Launch:
    """What ``convodex resume`` runs: the agent's command in the session's workspace."""
    return Launch(resume_argv(agent, session_id, cwd), cwd or os.getcwd(), agent, cwd)


def handoff_agent(value: str) -> str:
    """An ``--in`` agent name, checked against the agents that can take a first prompt."""
    name = agent_name(value)
    templates = {**built_in_handoffs(), **_overrides("handoff")}
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
    overrides = _overrides("handoff")
    template = {**built_in_handoffs(), **overrides}[name]
    workspace = cwd or os.getcwd()
    prompt = brief if name in overrides or name not in READS_THE_FILE else pointer(brief_path)
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
