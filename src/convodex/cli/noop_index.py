"""``convodex index`` when nothing changed, answered before click loads (SPEC L20,
issue 28): a hook or a timer runs it often, and click's import alone was a fifth of it.

Only the plain forms are answered here (``--root``, ``--cache-dir``, ``--json``,
``--follow-symlinks``); anything else (``--help``, an unknown option, a missing value),
any error, and every run that may change something is None: nothing has been printed
and the click command runs, in its own words. What is printed is the command's own
(``cli.search.index``): the same report, through the same helpers.
"""

from __future__ import annotations

import sys
from pathlib import Path

from convodex.cli.plain import index_summary, roots_or_defaults

FLAGS = ("--follow-symlinks", "--json")
VALUED = ("--root", "--cache-dir")


def parse(args: list[str]) -> tuple[tuple[str, ...], bool, Path | None, bool] | None:
    """``(roots, follow_symlinks, cache_dir, as_json)`` as the click command would get
    them, or None for anything but the plain forms."""
    roots: list[str] = []
    cache_dir: Path | None = None
    flags = dict.fromkeys(FLAGS, False)
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        name, eq, value = arg.partition("=")
        if name in VALUED:
            if not eq:
                if not rest:
                    return None
                value = rest.pop(0)
            if not value or value.startswith("-"):  # click's own reading decides
                return None
            if name == "--root":
                roots.append(value)
            else:
                cache_dir = Path(value)
        elif arg in FLAGS:
            flags[arg] = True
        else:
            return None
    return tuple(roots), flags["--follow-symlinks"], cache_dir, flags["--json"]


def answer(args: list[str]) -> int | None:
    """The exit status of ``index`` with these arguments when nothing changed, its
    report printed; None when the click command must run instead."""
    parsed = parse(args)
    if parsed is None:
        return None
    from convodex.cli.stopping import stops_cleanly

    with stops_cleanly("index"):
        return _answer(*parsed)


def _answer(
    roots: tuple[str, ...], follow_symlinks: bool, cache_dir: Path | None, as_json: bool
) -> int | None:
    from convodex.catalog.demo import recorded_demo
    from convodex.catalog.service import HistoryService
    from convodex.errors import ConvodexError
    from convodex.models import IndexReport, encode

    try:
        if not roots and recorded_demo(cache_dir) is not None:
            return None  # the command rebuilds the catalog without the demo
        root_list = roots_or_defaults(roots)
        with HistoryService.open(cache_dir, root_list, follow_symlinks=follow_symlinks) as service:
            stats = service.index_if_unchanged()
            if stats is None:
                return None
            state = service.progress()
            failed = service.failed_sources()
    except ConvodexError:
        return None  # the command says what went wrong
    try:
        if as_json:
            shown = [str(r) for r in root_list]
            report = IndexReport(stats=stats, progress=state, roots=shown, failed=failed)
            _echo(encode(report).decode("utf-8"))
            return 0
        _echo(index_summary(stats, len(failed)))
        if failed:
            from convodex.cli.search import print_failed

            print_failed(failed)
    except BrokenPipeError:  # as click ends on a closed pipe: status 1, no traceback
        _quiet_stdout()
        return 1
    return 0


def _echo(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _quiet_stdout() -> None:
    """Stdout to /dev/null: the interpreter's flush at exit would hit the closed pipe."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
