"""``convodex show``, ``export`` and ``resume``: from a hit back to work (SPEC L15). Thin:
the service resolves refs and reads sessions; ``sessions/`` renders and launches."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import click

from convodex import config
from convodex.catalog.refs import SessionRef
from convodex.catalog.service import HistoryService
from convodex.cli.hits import counted, use_color
from convodex.cli.options import cache_dir_option, color_option, emit_json, history, json_option
from convodex.models import SessionDocument
from convodex.sessions.resume import Launch
from convodex.warm.context import local_only

REF_HELP = "REF: a session id, a unique prefix (6+ characters), id#N (a hit's ref) or a path."


def open_service(cache_dir: Path | None) -> contextlib.AbstractContextManager[HistoryService]:
    """Refs resolve over the whole catalog: no roots are scanned."""
    return history(cache_dir)


def page(
    text: str, color: bool, *, at_line: int | None = None, terminal: int | None = None
) -> None:
    """On a terminal through ``$PAGER`` (``less -R`` by default); plain when piped.

    ``at_line``: less opens there (the picker's show opens at the hit); ``terminal``:
    the pager's output, a terminal although stdout is a pipe (``$(convodex pick)``).
    """
    if terminal is None and not sys.stdout.isatty():
        click.echo(text, nl=False, color=color)
        return
    local_only("a pager on the client's terminal")
    try:
        argv = shlex.split(os.environ.get("PAGER") or "less -R")
    except ValueError:
        argv = []
    if not argv:
        click.echo(text, nl=False, color=color)
        return
    if at_line is not None and os.path.basename(argv[0]) == "less":
        argv.append(f"+{at_line}g")
    try:
        with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=terminal) as pager:
            assert pager.stdin is not None
            try:
                pager.stdin.write(text.encode("utf-8"))
                pager.stdin.close()
            except BrokenPipeError:
                pass  # the reader quit before the end
            pager.wait()
    except OSError:
        click.echo(text, nl=False, color=color)
    except KeyboardInterrupt:
        pass


def show_text(
    document: SessionDocument, fmt: str, tools: bool, focus: int | None, color: bool
) -> str:
    from convodex.sessions import render

    if fmt == "json":
        return render.json_text(document)
    if fmt == "markdown":
        return render.markdown(document, tools=tools, focus=focus)
    return render.text(document, tools=tools, focus=focus, color=color, home=str(Path.home()))


@click.command()
@click.argument("ref")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
)
@click.option("--tools", is_flag=True, help="Show tool calls and results in full.")
@click.option("--around", type=int, help="Only N messages either side of the ref's #N.")
@click.option("--redact", is_flag=True, help="Replace likely secrets with [redacted].")
@color_option
@cache_dir_option
def show(
    ref: str,
    fmt: str,
    tools: bool,
    around: int | None,
    redact: bool,
    color: str,
    cache_dir: Path | None,
) -> None:
    """Print a session's effective branch as its agent showed it.

    \b
    REF: a session id, a unique prefix (6+ characters), id#N (a hit's ref) or a path.
    Tool calls and results are folded to one line each unless --tools is given; the
    message at #N is marked. On a terminal the output goes through $PAGER.
    """
    from convodex.catalog.transcript import redact_document
    from convodex.sessions.render import window

    if ("/" in ref or os.sep in ref) and not os.path.isabs(os.path.expanduser(ref)):
        local_only("a path relative to the client's directory")
    with open_service(cache_dir) as service:
        target = service.resolve(ref)
        document = service.document(target)
    document = window(document, target.message_index, around)
    if redact:
        document = redact_document(document)
    colored = fmt == "text" and use_color(color)
    page(show_text(document, fmt, tools, target.message_index, colored), colored)


@click.command()
@click.argument("ref")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "html", "json"]),
    default="markdown",
    show_default=True,
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write to FILE."
)
@click.option("--force", is_flag=True, help="With -o: replace FILE when it exists.")
@click.option("--redact", is_flag=True, help="Replace likely secrets with [redacted].")
@cache_dir_option
def export(
    ref: str, fmt: str, output: Path | None, force: bool, redact: bool, cache_dir: Path | None
) -> None:
    """Export a session as a self-contained Markdown, HTML or JSON document.

    \b
    REF: a session id, a unique prefix (6+ characters), id#N (a hit's ref) or a path.
    The effective branch with every tool call, under a header (title, agent, project,
    dates, message count). HTML has its CSS inline and loads nothing.
    """
    from convodex.catalog.transcript import redact_document
    from convodex.errors import InvalidInput
    from convodex.sessions.export import export as render_export

    if output is not None and not force and os.path.lexists(output):
        raise InvalidInput(f"{output} already exists: add --force to replace it")
    with open_service(cache_dir) as service:
        document = service.document(service.resolve(ref))
    if redact:
        document = redact_document(document)
    written = render_export(document, fmt)
    if output is None:
        click.echo(written, nl=False)
        return
    write_private(output, written, replace=force)
    click.echo(f"exported {counted(document.message_count, 'message')} to {output}", err=True)


def write_private(path: Path, text: str, *, replace: bool = True) -> None:
    """A new file readable by its owner only: conversations are private. Without
    ``replace`` an existing file is an error, never overwritten (even one that appears
    meanwhile)."""
    from convodex.errors import InvalidInput

    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if replace else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        if isinstance(exc, FileExistsError):
            raise InvalidInput(f"{path} already exists: add --force to replace it") from exc
        raise InvalidInput(f"{path}: cannot be written ({exc.strerror})") from exc


def brief_path(cache_dir: Path | None, session_id: str) -> Path:
    """Where a hand-off brief is kept: beside the catalog, private to the user."""
    import re

    folder = config.cache_root(cache_dir) / "handoffs"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / (re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:120] + ".md")


def resume_target(
    service: HistoryService,
    target: SessionRef,
    *,
    into: str | None,
    max_bytes: int,
    cache_dir: Path | None,
    redact: bool = True,
) -> tuple[Launch, Path | None, str]:
    """(the launch, the brief's path or None, the line ``--print`` shows)."""
    from convodex.sessions import resume
    from convodex.sessions.brief import brief

    if into is None:
        launch = resume.resume_launch(target.agent, target.session_id, target.workspace)
        return launch, None, launch.shell()
    from convodex.catalog.transcript import redact_document

    document = service.document(target)
    shared = redact_document(document) if redact else document
    text = brief(shared, max_bytes)
    path = brief_path(cache_dir, document.session_id)
    write_private(path, text)
    # The agent runs in the session's real workspace, whatever the brief shows of it.
    launch = resume.handoff_launch(into, text, path, document.project)
    if text not in launch.argv:
        return launch, path, launch.shell()  # the brief goes by its file
    shown = resume.handoff_launch(into, "\0brief\0", path, document.project).shell()
    shown = shown.replace(shlex.quote("\0brief\0"), f'"$(cat {shlex.quote(str(path))})"')
    return launch, path, shown


@click.command()
@click.argument("ref")
@click.option("--in", "into", metavar="AGENT", help="Hand the session to another agent.")
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1024),
    default=8 * 1024,
    show_default=True,
    help="With --in: the brief's size limit.",
)
@click.option(
    "--print", "print_only", is_flag=True, help="Print the command instead of running it."
)
@click.option(
    "--redact/--no-redact",
    default=True,
    show_default=True,
    help="With --in: mask likely secrets, the home directory and the user name in the brief.",
)
@json_option
@cache_dir_option
def resume(
    ref: str,
    into: str | None,
    max_bytes: int,
    print_only: bool,
    redact: bool,
    as_json: bool,
    cache_dir: Path | None,
) -> None:
    """Resume a session in its own agent, in its workspace (or hand it to another).

    \b
    REF: a session id, a unique prefix (6+ characters), id#N (a hit's ref) or a path.
    The agent's documented resume command runs in the session's workspace and takes
    over the terminal; override it per agent in the [resume] table of
    $XDG_CONFIG_HOME/convodex/config.toml. --in AGENT starts AGENT there instead, with
    a Markdown brief of the session as its first prompt: redacted unless --no-redact,
    kept in a private file and, where the agent reads files, passed by that file.
    """
    with open_service(cache_dir) as service:
        target = service.resolve(ref)
        run_resume(service, target, into, max_bytes, print_only, as_json, cache_dir, redact)


def run_resume(
    service: HistoryService,
    target: SessionRef,
    into: str | None,
    max_bytes: int,
    print_only: bool,
    as_json: bool,
    cache_dir: Path | None,
    redact: bool = True,
) -> None:
    """Print the command, or close the service and become the agent (never returns)."""
    from convodex.sessions.resume import check, execute

    launch, path, shown = resume_target(
        service, target, into=into, max_bytes=max_bytes, cache_dir=cache_dir, redact=redact
    )
    if as_json:
        emit_json(
            {
                "command": shown,
                "argv": launch.argv if path is None else None,
                "directory": launch.cwd,
                "agent": launch.agent,
                "brief": None if path is None else str(path),
            }
        )
        return
    if print_only:
        click.echo(shown)
        if path is not None:
            click.echo(f"brief: {path}")
        return
    check(launch)  # a missing executable is an error before anything is left behind
    service.close()
    sys.stdout.flush()
    sys.stderr.flush()
    execute(launch)
