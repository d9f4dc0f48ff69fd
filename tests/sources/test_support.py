"""The support table in docs/formats.md is the one the readers generate."""

from __future__ import annotations

from convodex.sources import support
from convodex.sources.registry import FORMATS
from helpers import FIXTURES


def test_the_support_table_is_generated_from_the_readers() -> None:
    page = (FIXTURES.parents[1] / "docs" / "formats.md").read_text("utf-8")
    start, end = page.index(support.BEGIN), page.index(support.END) + len(support.END)
    assert page[start:end] + "\n" == support.table(), (
        "docs/formats.md: run `python -m convodex.sources.support` and paste its table"
    )


def test_every_reader_has_a_support_row() -> None:
    missing = [name for name, fmt in FORMATS.items() if fmt.support is None]
    assert missing == []
