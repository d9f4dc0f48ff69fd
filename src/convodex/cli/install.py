"""``convodex install`` / ``convodex uninstall``: wire convodex's MCP server and recall
hook into agents' own configuration files, and take exactly that out again (L18).

Thin: the agents package plans and writes; this parses, prints and sets the status
(0 done, 1 a file was refused, 2 usage). Output names files and entries, never
anything from the files' other content.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from convodex.cli.options import emit_json, json_option


def _options(fn: Any) -> Any:
    fn = json_option(fn)
    fn = click.option(
        "--dry-run", is_flag=True, help="Print the exact change to each file; write nothing."
    )(fn)
    fn = click.option(
        "--project",
        is_flag=True,
        help="This project's files (the current directory) instead of your user-wide ones.",
    )(fn)
    return click.argument("agents", nargs=-1)(fn)


@click.command("install")
@_options
def install(agents: tuple[str, ...], project: bool, dry_run: bool, as_json: bool) -> None:
    """Wire the MCP server, and the recall hook where the agent has hooks, into each
    AGENT's configuration (default: every agent installed here).

    Agents: claude-code, codex, gemini, cursor, opencode, copilot, qwen, cline.
    """
    _run("install", agents, project, dry_run, as_json)


@click.command("uninstall")
@_options
def uninstall(agents: tuple[str, ...], project: bool, dry_run: bool, as_json: bool) -> None:
    """Remove exactly what install added (default: from every agent it wired)."""
    _run("uninstall", agents, project, dry_run, as_json)


def _chosen(names: tuple[str, ...], project: bool, verb: str) -> tuple[list[Any], list[str]]:
    from convodex.agents.registry import AGENTS, ALIASES
    from convodex.agents.spec import Scope

    scope = Scope(home=Path.home())
    picked = []
    skipped = []
    for raw in names:
        name = ALIASES.get(raw.lower(), raw.lower())
        if name not in AGENTS:
            import difflib

            close = difflib.get_close_matches(name, list(AGENTS), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            known = ", ".join(AGENTS)
            raise click.UsageError(f"unknown agent {raw!r}{hint}; known: {known}")
        if AGENTS[name] not in picked:
            picked.append(AGENTS[name])
    if not names and verb == "install":
        picked = [a for a in AGENTS.values() if a.present(scope)]
    elif not names:
        from convodex.agents.files import read_manifest

        wired = {record.agent for record in read_manifest().values()}
        picked = [a for a in AGENTS.values() if a.name in wired]
    if project:
        for agent in [a for a in picked if a.no_project]:
            picked.remove(agent)
            if names:
                skipped.append(f"{agent.name}: no --project ({agent.no_project})")
    return picked, skipped


def _run(verb: str, names: tuple[str, ...], project: bool, dry_run: bool, as_json: bool) -> None:
    from convodex.agents import engine
    from convodex.agents.jsonc import EditError
    from convodex.agents.spec import Scope, launcher

    agents, skipped = _chosen(names, project, verb)
    scope = Scope(home=Path.home(), project=Path.cwd() if project else None)
    command = launcher()
    changes: list[engine.FileChange] = []
    refused: list[dict[str, str]] = []
    for agent in agents:
        try:
            planned = []
            for path, targets in engine.by_file(agent.targets(scope, command)).items():
                plan = engine.plan_install if verb == "install" else engine.plan_uninstall
                planned.append(plan(agent.name, path, targets))
        except EditError as exc:
            refused.append({"agent": agent.name, "error": str(exc)})
            continue
        for change in planned:
            if not dry_run:
                apply = engine.apply_install if verb == "install" else engine.apply_uninstall
                try:
                    change = apply(change)
                except (OSError, EditError) as exc:
                    refused.append({"agent": agent.name, "error": f"{change.path}: {exc}"})
                    continue
            changes.append(change)
    if as_json:
        emit_json(
            {
                "dryRun": dry_run,
                "changes": [c.public() for c in changes],
                "refused": refused,
                "skipped": skipped,
            }
        )
    else:
        _print(verb, changes, dry_run)
        for line in skipped:
            click.echo(f"skipped {line}", err=True)
        for item in refused:
            click.echo(f"error: {item['agent']}: {item['error']}", err=True)
        if not agents and not names:
            none = "none of their configuration folders exists here"
            if verb == "uninstall":
                none = "convodex has not wired any"
            click.echo(f"no agent to {verb}: {none}")
    if refused:
        sys.exit(1)


def _print(verb: str, changes: list[Any], dry_run: bool) -> None:
    home = str(Path.home())
    for change in changes:
        shown = change.path
        if shown.startswith(home + os.sep):
            shown = "~" + shown[len(home) :]
        if dry_run and change.action != "unchanged":
            click.echo(change.diff(), nl=False)
            continue
        what = {
            "create": "created with",
            "change": "added",
            "unchanged": "unchanged",
            "restore": "restored to its original bytes, without",
            "remove": "removed",
            "delete": "deleted (convodex had created it), without",
        }[change.action]
        entries = ", ".join(change.entries)
        tail = f" {entries}" if entries and change.action != "unchanged" else ""
        click.echo(f"{change.agent:<12} {shown}: {what}{tail}")
        if change.backup and change.action in ("create", "change"):
            click.echo(f"{'':<12} backup of the original: {change.backup}")
