"""What a report view is: a tab showing one analysis's report.

A view names its tab, says how to build its report from the loaded target (an
`api` function, run in the loading worker) and how to show it (a widget made from
the report). Adding the browser's screen for a new analysis is one module in this
package defining a `ReportView` and one line in `hloscope.tui.views.VIEWS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from textual.message import Message
from textual.widget import Widget

from hloscope.api import Loaded


def always(_loaded: Loaded) -> bool:
    return True


@dataclasses.dataclass(frozen=True)
class ReportView:
    """A tab showing one report."""

    id: str
    """The tab's id (`overview`)."""
    title: str
    """The tab's label (`Overview`)."""
    build: Callable[[Loaded], Any]
    """Builds the report (an `api` function); runs in the loading worker."""
    widget: Callable[[Any], Widget]
    """Makes the widget that shows a report."""
    applies: Callable[[Loaded], bool] = always
    """Whether the view has something to show for this target (an AOT check needs an
    entrypoint); the tab is left out when it does not."""


class ShowOp(Message):
    """Ask the browser to select an op in the IR tab (a view's row leads there)."""

    def __init__(self, op_id: int) -> None:
        self.op_id = op_id
        super().__init__()
