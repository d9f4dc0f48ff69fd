"""A short command run inside the service for a client: the very click command the
client would have run, with the service standing in for the catalog it would open
and the client's terminal flags, so the output is byte for byte the same."""

from __future__ import annotations

import os

from convodex.warm import NotWarm, streams
from convodex.warm.context import CURRENT, WarmCall
from convodex.warm.host import Host


def run(
    call: WarmCall, host: Host, args: list[str], out_tty: bool, err_tty: bool
) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of ``convodex ARGS``; ``NotWarm`` when the client
    must run it itself (also for any failure that is not the command's own answer)."""
    token = CURRENT.set(call)
    try:
        with streams.captured(out_tty, err_tty) as (out, err):
            try:
                host.command(args)
                code = 0  # pragma: no cover - standalone click always exits
            except SystemExit as exc:
                code = _status(exc, err)
            return code, out.value(), err.value()
    except NotWarm:
        raise
    except Exception as exc:
        raise NotWarm(type(exc).__name__) from exc
    finally:
        CURRENT.reset(token)


def _status(exc: SystemExit, err: streams.Captured) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    err.write(f"{exc.code}{os.linesep}")  # what the interpreter prints for a message exit
    return 1
