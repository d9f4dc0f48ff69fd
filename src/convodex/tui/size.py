"""The size of the terminal the picker draws on (the standard library only: the first
frame asks before Textual has loaded, and Textual's driver asks it too)."""

from __future__ import annotations

import os


def terminal_size(default: tuple[int, int] = (80, 24)) -> tuple[int, int]:
    """The size of the terminal the picker draws on: its standard error's (where Textual
    writes), else its input's, else its output's. Not just standard output's, as
    Textual asks: in ``ref=$(convodex pick --print)`` that is a pipe, and Textual drew
    80×24 in a bigger terminal."""
    for fd in (2, 0, 1):
        try:
            size = os.get_terminal_size(fd)
        except OSError:
            continue
        if size.columns and size.lines:
            return size.columns, size.lines
    return default
