"""The picker's first frame with its first results, drawn before Textual has loaded.

The search box, the results grouped per session, the first hit's preview and the
status line, laid out, wrapped and coloured the way the Textual app draws them
(``view`` holds what both show), so that nothing moves when Textual's first frame
replaces this one (``screen`` says how the terminal is handed over). Only Textual's
footer is left out: its first frame has none yet, and keys drawn here would vanish for
a moment. ``tests/tui/test_first_frame.py`` holds the two frames side by side.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from rich.cells import chop_cells

from convodex.errors import ConvodexError
from convodex.models import SearchPage
from convodex.text.query import Query, parse
from convodex.tui import view
from convodex.tui.screen import PRIMARY, Cell, cell_len, fit, search_box
from convodex.tui.state import Filters, FirstLook

# The views' styles as Select Graphic Rendition parameters (see ``screen``).
STYLES = {"": "", "bold": "1", "dim": "2", view.MATCH: "1;33", "bold reverse": "1;7"}
TRACK = "40"  # a scrollbar's track
BARS = "▁▂▃▄▅▆▇ "  # a thumb's fractional end, as Textual draws it
WORD = re.compile(r"\s*\S+\s*")

# A block of whole lines, styled for a query (None: unmarked); None: a separator line.
Item = Callable[[Query | None], list[view.Span]] | None


def divide_line(text: str, width: int) -> list[int]:
    """Where Textual breaks ``text`` to fit ``width`` cells: Rich's word wrap (words
    keep their trailing spaces, a word longer than a line is folded)."""
    breaks: list[int] = []
    offset = 0
    for match in WORD.finditer(text):
        start, word = match.start(), match.group()
        length = cell_len(word.rstrip())
        if width - offset >= length:
            offset += cell_len(word)
        elif length > width:
            pieces = chop_cells(word, width)
            for n, piece in enumerate(pieces):
                if start:
                    breaks.append(start)
                if n == len(pieces) - 1:
                    offset = cell_len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = cell_len(word)
    return breaks


def wrap(spans: list[view.Span], width: int) -> list[list[Cell]]:
    """Styled spans as lines of at most ``width`` cells, wrapped as Textual wraps."""
    paragraphs: list[list[view.Span]] = [[]]
    for text, style in spans:
        for n, part in enumerate(text.split("\n")):
            if n:
                paragraphs.append([])
            if part:
                paragraphs[-1].append((part, style))
    lines: list[list[Cell]] = []
    for paragraph in paragraphs:
        plain = "".join(text for text, _ in paragraph)
        cuts = [0, *divide_line(plain, width), len(plain)]
        bounds = []
        at = 0
        for text, style in paragraph:
            bounds.append((at, at + len(text), STYLES[style]))
            at += len(text)
        last = len(cuts) - 2
        for n, (begin, end) in enumerate(zip(cuts, cuts[1:], strict=False)):
            line = [(plain[max(s, begin) : min(e, end)], sgr) for s, e, sgr in bounds]
            cells = [(text, sgr) for text, sgr in line if text]
            if n != last:
                cells = _rstrip(cells)
            lines.append(_truncate(cells, width))
    return lines


def _ends_line(spans: list[view.Span]) -> bool:
    return bool(spans) and spans[-1][0].endswith("\n")


def _block(spans: list[view.Span], width: int) -> list[list[Cell]]:
    """A block's lines: a line break at its end closes its last line (the next block
    starts a line of its own) rather than opening an empty one."""
    lines = wrap(spans, width)
    return lines[:-1] if _ends_line(spans) else lines


def _rstrip(cells: list[Cell]) -> list[Cell]:
    while cells and not cells[-1][0].rstrip():
        cells.pop()
    if cells:
        cells[-1] = (cells[-1][0].rstrip(), cells[-1][1])
    return cells


def _truncate(cells: list[Cell], width: int) -> list[Cell]:
    out: list[Cell] = []
    room = width
    for text, sgr in cells:
        if cell_len(text) > room:
            text = chop_cells(text, room)[0] if room else ""
        out.append((text, sgr))
        room -= cell_len(text)
        if room <= 0:
            break
    return out


def scrollbar(size: int, virtual: int, offset: int) -> list[Cell]:
    """A vertical scrollbar, row by row, drawn as Textual draws it (a thumb's ends in
    eighths of a row); all track when nothing is hidden."""
    if virtual <= size:
        return [("  ", TRACK)] * size
    thumb = max(1.0, size / (virtual / size))
    position = (size - thumb) * offset / (virtual - size)
    start = int(position * len(BARS))
    end = start + math.ceil(thumb * len(BARS))
    start_index, start_bar = divmod(start, len(BARS))
    end_index, end_bar = divmod(end, len(BARS))
    rows = [("  ", TRACK)] * size
    for y in range(start_index, min(end_index, size)):
        rows[y] = ("  ", f"7;{PRIMARY}")
    if start_index < size and BARS[-1 - start_bar] != " ":
        rows[start_index] = (BARS[-1 - start_bar] * 2, f"{PRIMARY};{TRACK}")
    if end_index < size and BARS[-1 - end_bar] != " ":
        rows[end_index] = (BARS[-1 - end_bar] * 2, f"7;{PRIMARY};{TRACK}")
    return rows


def scrolled_to(start: int, height: int, window: int) -> int:
    """How far a list scrolls to show lines ``start`` to ``start + height`` (the
    highlighted result) in a window of ``window`` lines: as little as it can, to its
    first line when it does not fit."""
    if start + height <= window:
        return 0
    return start if height >= window else start + height - window


@dataclass
class Frame:
    """One screen of the picker at a terminal size, before Textual."""

    width: int
    height: int
    query: str
    filters: Filters
    look: FirstLook | None
    home: str

    def rows(self) -> list[list[Cell]]:
        width, height = self.width, self.height
        panes = height - 5  # below the 3-row search box, above the status line and footer
        split = width * view.RESULTS_PERCENT // 100
        rows = search_box(width, self.query)
        results, first = self._results()
        preview = self._preview()
        left = self._pane(results, first, split, panes, results=True)
        right = self._pane(preview, None, width - split, panes, results=False)
        rows.extend([*a, *b] for a, b in zip(left, right, strict=True))
        rows.append(fit([(" ", ""), *wrap([(self._status(), "")], width - 2)[0]], width))
        # The footer's keys come with Textual's second frame; drawn here, they would
        # vanish for a moment when its first frame comes in.
        rows.append(fit([], width))
        return rows

    def plain(self) -> list[str]:
        """The frame's text, row by row (what a screen capture shows)."""
        return ["".join(text for text, _ in row) for row in self.rows()]

    # -- parts ---------------------------------------------------------------------------

    @functools.cached_property
    def parsed(self) -> Query | None:
        try:
            return parse(self.query) if self.query.strip() else None
        except ConvodexError:
            return None

    def _layout(self, items: list[Item], width: int) -> tuple[list[list[Cell]], list[int]]:
        """The items' lines, unmarked (marks never move a line break), and the line
        each item starts at (one more entry: the end)."""
        lines: list[list[Cell]] = []
        starts = []
        for item in items:
            starts.append(len(lines))
            lines.extend([[("─" * width, "")]] if item is None else _block(item(None), width))
        starts.append(len(lines))
        if items and items[-1] is not None and _ends_line(items[-1](None)):
            lines.append([])  # the text's last line break opens an empty line
        return lines, starts

    def _pane(
        self, items: list[Item], first: int | None, width: int, height: int, *, results: bool
    ) -> list[list[Cell]]:
        """A pane of ``width`` columns: its items' lines, scrolled to show item
        ``first`` (the highlighted result), with a scrollbar (2 columns, before the right
        padding) when they overflow; only the items on screen get their marks. The
        results have a column of padding either side and always a scrollbar (a steady
        width keeps Textual's line heights right) over as many rows as they fill; the
        preview has a border and a column of padding on its left."""
        left: list[Cell] = [(" ", "")] if results else [("│", PRIMARY), (" ", "")]
        room = width - len(left) - 1 - (2 if results else 0)
        lines, starts = self._layout(items, room)
        if not results and len(lines) > height:
            room -= 2
            lines, starts = self._layout(items, room)
        offset = 0
        if first is not None and len(lines) > height:
            offset = scrolled_to(starts[first], starts[first + 1] - starts[first], height)
        for n, item in enumerate(items):
            if item is not None and self.parsed is not None:
                top, bottom = starts[n], starts[n + 1]
                if bottom > offset and top < offset + height:
                    lines[top:bottom] = _block(item(self.parsed), room)
        filled = min(height, len(lines)) if results else height
        bar: list[Cell] | None = None
        if len(lines) > height or results:
            bar = scrollbar(filled, len(lines), offset)
        rows = []
        for y in range(height):
            if y >= filled:
                rows.append([(" " * width, "")])
                continue
            line = fit(lines[offset + y] if offset + y < len(lines) else [], room)
            rows.append([*left, *line, *([] if bar is None else [bar[y]]), (" ", "")])
        return rows

    def _page(self) -> SearchPage | None:
        page = self.look.page if self.look is not None else None
        return page if isinstance(page, SearchPage) else None

    def _results(self) -> tuple[list[Item], int | None]:
        """The results as items (a session heading, its hits; a separator line between
        sessions; or the recent sessions, a line each) and which one is highlighted
        (the first hit, the first session)."""
        page = self._page()
        if page is None:
            return [], None
        items: list[Item] = []
        if not page.hits:
            for session in view.listed(page):
                line = [(view.session_header(session, self.home), "")]
                items.append(functools.partial(view.unmarked, line))
            return items, 0 if items else None
        first: int | None = None
        for n, members in enumerate(view.grouped(page.hits)):
            if n:
                items.append(None)
            heading = [(view.session_header(members[0], self.home), "bold")]
            items.append(functools.partial(view.unmarked, heading))
            for hit in members:
                first = len(items) if first is None else first
                items.append(functools.partial(view.hit_line, hit))
        return items, first

    def _preview(self) -> list[Item]:
        page = self._page()
        rows: list[view.Row] = [*page.hits, *view.listed(page)] if page is not None else []
        if not rows or self.look is None:
            return []
        return list(view.preview_blocks(rows[0], self.look.preview, self.home))

    def _status(self) -> str:
        page = self.look.page if self.look is not None else None
        if isinstance(page, ConvodexError):
            return view.status(str(page), "", None, self.filters)
        if page is None:
            return view.status(None, "", None, self.filters)
        return view.status(None, view.page_summary(page), page.progress, self.filters)
