"""The terminal between ``convodex pick``'s launch and Textual (SPEC L16).

Importing the catalog, searching, then importing Textual and starting its app take
longer than the 300 ms the first results are due in. So the picker's screen is drawn
before Textual: this module enters the alternate screen and turns the terminal's echo
off (early keys wait for the app instead of smearing the screen), and draws the search
box at once, before the catalog's modules load; ``first_frame`` then draws the whole
picker with the first results. Textual takes over through ``FirstFrame.driver_class``:
it does not enter the alternate screen again (that may clear it, or save the cursor
over the shell's) and restores the terminal's own settings when it leaves. Its first
frame overwrites this one line by line: nothing blank in between, no flicker.

Only the standard library here (Rich's cell widths for text beyond ASCII, on demand):
it runs before anything else is imported.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.driver import Driver

ENTER_ALTERNATE = "\x1b[?1049h"
PLACEHOLDER = "search your conversations…"
# Colours as Select Graphic Rendition parameters, in the ANSI colours of the picker's
# theme (ansi-dark): the terminal's own palette, so the frames before and after
# Textual look the same.
BORDER = "35"  # the focused search box ($border)
PRIMARY = "34"  # the preview's left border and the scrollbar thumbs ($primary)
CURSOR = "30;47"
SMALLEST = (20, 8)  # columns, rows: below this the app alone draws

Cell = tuple[str, str]  # (text, SGR parameters)


def cell_len(text: str) -> int:
    """Columns ``text`` takes, as Textual counts them (Rich's tables beyond ASCII)."""
    if text.isascii() and text.isprintable():
        return len(text)
    from rich.cells import cell_len as cells

    return cells(text)


def fit(cells: list[Cell], width: int) -> list[Cell]:
    """``cells`` padded with spaces to exactly ``width`` columns."""
    used = sum(cell_len(text) for text, _ in cells)
    return [*cells, (" " * (width - used), "")] if used < width else cells


def search_box(width: int, query: str) -> list[list[Cell]]:
    """The search box's three rows, focused, as Textual's Input draws it: the query
    with the cursor after it (typing adds to it), or the placeholder under the cursor."""
    inner = width - 6  # a tall border and two columns of padding either side
    if query:
        shown = query
        while shown and cell_len(shown) + 1 > inner:
            shown = shown[1:]  # the box scrolls to keep the cursor, at the end, in view
        value = [(shown, ""), (" ", CURSOR)]
    else:
        hint = PLACEHOLDER[:inner]
        value = [(hint[:1], f"2;{CURSOR}"), (hint[1:], "2")]
    edge = ("▊", f"7;{BORDER}")
    return [
        [edge, ("▔" * (width - 2), BORDER), ("▎", BORDER)],
        [edge, ("  ", ""), *fit(value, inner), ("  ", ""), ("▎", BORDER)],
        [edge, ("▁" * (width - 2), BORDER), ("▎", BORDER)],
    ]


def encode(rows: list[list[Cell]]) -> str:
    """Rows from the top of the screen as escape sequences, each row placed first."""
    out = []
    for y, row in enumerate(rows, start=1):
        out.append(f"\x1b[{y};1H")
        out.extend(f"\x1b[0;{sgr}m{text}" if sgr else f"\x1b[0m{text}" for text, sgr in row)
    out.append("\x1b[0m")
    return "".join(out)


class FirstFrame:
    """The terminal while the first frame is up: the alternate screen, no echo.

    ``start`` returns None where the app must draw alone (not a terminal, too small).
    """

    def __init__(self, saved: list[Any], width: int, height: int) -> None:
        self.saved = saved  # the terminal's own settings, restored on the way out
        self.width = width
        self.height = height
        self._lock = threading.Lock()
        self._handed_over = False

    @classmethod
    def start(cls) -> FirstFrame | None:
        if os.name != "posix" or os.environ.get("TERM", "dumb") == "dumb":
            return None
        if not (os.isatty(0) and os.isatty(2)):
            return None
        import termios

        try:
            saved = termios.tcgetattr(0)
            size = os.get_terminal_size(2)
        except (termios.error, OSError):
            return None
        if size.columns < SMALLEST[0] or size.lines < SMALLEST[1]:
            return None
        quiet = termios.tcgetattr(0)
        quiet[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN | termios.ISIG)
        quiet[6][termios.VMIN] = 1
        quiet[6][termios.VTIME] = 0
        try:
            termios.tcsetattr(0, termios.TCSANOW, quiet)
        except termios.error:
            return None
        frame = cls(saved, size.columns, size.lines)
        # The alternate screen, no cursor, no autowrap: as the app will have it.
        frame._write(ENTER_ALTERNATE + "\x1b[?25l\x1b[?7l")
        return frame

    def paint(self, rows: list[list[Cell]]) -> bool:
        """Draw ``rows`` unless Textual has the screen already; says whether it did."""
        text = encode(rows)
        with self._lock:
            if self._handed_over:
                return False
            self._write(text)
        return True

    def take_over(self) -> bool:
        """Textual has the screen from now on; True the first time."""
        with self._lock:
            first = not self._handed_over
            self._handed_over = True
        return first

    def close(self) -> None:
        """Give the terminal back when Textual never took it (it restores it itself)."""
        if not self.take_over():
            return
        import termios

        self._write("\x1b[0m\x1b[?7h\x1b[?25h\x1b[?1049l")
        try:
            termios.tcsetattr(0, termios.TCSANOW, self.saved)
        except termios.error:
            pass  # the terminal is gone

    def driver_class(self) -> type[Driver]:
        """Textual's Linux driver, taking the screen over from this frame."""
        from convodex.tui.driver import TerminalDriver

        first = self

        class HandoverDriver(TerminalDriver):
            def write(self, data: str) -> None:
                if data == ENTER_ALTERNATE and first.take_over():
                    return  # already there: entering again may clear the screen
                super().write(data)

            def start_application_mode(self) -> None:
                super().start_application_mode()  # type: ignore[no-untyped-call]
                first.take_over()
                if self.attrs_before is not None:
                    self.attrs_before = first.saved  # not the frame's quiet settings

        return HandoverDriver

    @staticmethod
    def _write(text: str) -> None:
        data = text.encode("utf-8")
        while data:
            data = data[os.write(2, data) :]


def posix_driver() -> type[Driver] | None:
    """The driver measuring the terminal it draws on (``terminal_size``) on POSIX
    systems; elsewhere Textual's own."""
    if os.name != "posix":
        return None
    from convodex.tui.driver import TerminalDriver

    return TerminalDriver


@contextmanager
def early_screen(query: str) -> Iterator[FirstFrame | None]:
    """The terminal taken for the picker with its search box drawn, given back on the
    way out unless Textual took it over (None where the app must draw alone)."""
    screen = FirstFrame.start()
    if screen is not None:
        screen.paint(search_box(screen.width, query))
    try:
        yield screen
    finally:
        if screen is not None:
            screen.close()
