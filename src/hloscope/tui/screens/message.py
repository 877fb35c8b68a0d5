"""A failure, shown in the app: loading, compiling or a report failed."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ErrorScreen(ModalScreen[None]):
    """The message of a failure (as the command line would print it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter", "close", "Close the message"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, title: str, message: str) -> None:
        super().__init__()
        self.title_text = title
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box") as box:
            box.border_title = self.title_text
            box.border_subtitle = "escape closes · q quits"
            yield Static(Text(self.message), id="error-message")

    def action_close(self) -> None:
        self.dismiss(None)
