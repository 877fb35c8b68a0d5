"""What a report tab shows before its report is there: that it is being built, or
what pressing enter will do (compile the optimized module, run the AOT check or
the profile)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Static

from hloscope.tui.views.base import RunView


class PendingView(Static, can_focus=True):
    """A tab's placeholder; `runnable`: enter asks the app to build the report."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "run",
            "Run",
            tooltip=(
                "Build the tab's report: compile the optimized module, or run what the "
                "tab says (the AOT check, the profile)"
            ),
            show=True,
        ),
    ]

    def __init__(self, view_id: str, text: str | Text, *, runnable: bool) -> None:
        super().__init__(text, id=f"pending-{view_id}", classes="pending-view")
        self.view_id = view_id
        self.runnable = runnable

    def action_run(self) -> None:
        if self.runnable:
            self.post_message(RunView(self.view_id))
        else:
            self.notify("This report is still being built.", timeout=2)
