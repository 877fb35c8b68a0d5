"""`/`: the search prompt."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

HINT = (
    "an op name, a value (%3, %arg0), FILE:LINE (model.py:42) or any text of the IR; enter searches"
)


class SearchScreen(ModalScreen[str | None]):
    """Asks for a query; dismissed with it, or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "search", "Search"),
        Binding("escape", "cancel", "Cancel the search"),
    ]

    def __init__(self, previous: str = "") -> None:
        super().__init__()
        self.previous = previous

    def compose(self) -> ComposeResult:
        with Vertical(id="search-box"):
            yield Input(value=self.previous, placeholder="search", id="search-input")
            yield Static(HINT, id="search-hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_search(self) -> None:
        self.dismiss(self.query_one(Input).value)

    def action_cancel(self) -> None:
        self.dismiss(None)
