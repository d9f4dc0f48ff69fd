"""Textual's Linux driver, measuring the terminal it draws on (POSIX only)."""

from __future__ import annotations

from textual.drivers.linux_driver import LinuxDriver

from convodex.tui.size import terminal_size


class TerminalDriver(LinuxDriver):
    """Sized by the terminal the picker draws on, not by standard output (a pipe in
    ``ref=$(convodex pick --print)``: Textual then drew 80×24 in a bigger terminal)."""

    def _get_terminal_size(self) -> tuple[int, int]:
        return terminal_size(super()._get_terminal_size())
