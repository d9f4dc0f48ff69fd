"""Every CLI command is documented (the sqlite-utils habit)."""

from __future__ import annotations

from pathlib import Path

import click

from convodex.cli.main import main

DOCS = Path(__file__).resolve().parents[1] / "docs"


def command_paths(group: click.Group, prefix: str = "convodex") -> list[str]:
    paths = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        path = f"{prefix} {name}"
        paths.append(path)
        if isinstance(command, click.Group):
            paths.extend(command_paths(command, path))
    return paths


def test_every_command_is_in_the_docs() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    missing = [path for path in command_paths(main) if f"`{path}" not in text]
    assert not missing, f"undocumented commands: {missing}"


def test_readme_starts_with_the_two_commands() -> None:
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    head = readme[:600]
    assert "make run" in head and "make test" in head
