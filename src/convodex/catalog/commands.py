"""The copyable command that resumes a session (SPEC L15), for a hit or a session view.

Resume commands are each format's documented ``resume`` template (``FORMATS[name]``),
overridable per agent in the ``[resume]`` table of the user config file. Templates are
split like a shell would split them *before* the placeholders are filled, so an id or
a path with spaces or quotes stays one argument and never becomes shell syntax; the
one-line form people copy is ``shlex``-quoted. Running it is ``sessions/resume.py``'s.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Mapping

from convodex import config
from convodex.catalog.plan import agent_name
from convodex.errors import ConfigError

RESUME_PLACEHOLDERS = ("id", "cwd")


def shell_line(argv: list[str], cwd: str | None) -> str:
    command = shlex.join(argv)
    return f"cd {shlex.quote(cwd)} && {command}" if cwd else command


def label(agent: str) -> str:
    return agent.replace("_", "-")


def _known_agents() -> set[str]:
    from convodex.sources.registry import FORMATS

    return set(FORMATS)


def overrides(table: str) -> dict[str, str]:
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
    override = overrides("resume").get(name)
    if override is not None:
        return override
    return Templates()[name]


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
    found.update(overrides("resume"))
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
