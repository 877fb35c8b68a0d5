"""`?`: every key of the browser, read from the widgets' bindings."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Static

from hloscope.tui.keys import key_rows


def keys_table(sections: list[tuple[str, type[DOMNode]]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for title, cls in sections:
        rows = key_rows(cls)
        if not rows:
            continue
        table.add_row(Text(title, style="bold underline"), "")
        for row in rows:
            table.add_row(", ".join(row.keys), row.description)
        table.add_row("", "")
    return table


class HelpScreen(ModalScreen[None]):
    """The key reference."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "Close this help"),
        Binding("down,j", "scroll(1)", "Scroll down", show=False),
        Binding("up,k", "scroll(-1)", "Scroll up", show=False),
    ]

    def __init__(self, sections: list[tuple[str, type[DOMNode]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Keys"
            box.border_subtitle = "escape closes"
            yield Static(keys_table([*self.sections, ("This help", type(self))]))

    def action_close(self) -> None:
        self.dismiss(None)

    def action_scroll(self, delta: int) -> None:
        box = self.query_one("#help-box", VerticalScroll)
        box.scroll_to(y=box.scroll_y + delta, animate=False)
