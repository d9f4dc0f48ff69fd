"""A short list to choose from over the picker: what to do with a hit (Tab), which
agent (Ctrl-T), which project (Ctrl-P). Arrows move, Enter chooses, Esc goes back;
the search box keeps its text and its cursor meanwhile."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option


class Choices(ModalScreen[str | None]):
    """``options`` as (id, label); dismissed with the chosen id, or None on Esc."""

    DEFAULT_CSS = """
    Choices { align: center middle; }
    Choices > Vertical {
        width: auto; min-width: 40; max-width: 80%; height: auto; max-height: 80%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    Choices OptionList { height: auto; max-height: 20; border: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", priority=True),
    ]

    def __init__(self, title: str, options: list[tuple[str, str]], current: str | None) -> None:
        super().__init__()
        self.heading = title
        self.options = options
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.heading, classes="heading")
            yield OptionList(*(Option(label, id=key) for key, label in self.options))

    def on_mount(self) -> None:
        choices = self.query_one(OptionList)
        ids = [key for key, _ in self.options]
        choices.highlighted = ids.index(self.current) if self.current in ids else 0
        choices.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_back(self) -> None:
        self.dismiss(None)
