"""The Overview tab: the `inspect` report (structure, call graph, op counts,
timings, cost), drawn by the same renderer as `hloscope inspect --print`, so the
two never disagree and whatever that report gains shows here too."""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text
from textual import events
from textual.containers import VerticalScroll
from textual.widgets import Static

from hloscope.api import InspectReport, inspect_report
from hloscope.render.text import render_inspect
from hloscope.tui.views.base import ReportView


def rendered(report: InspectReport, width: int) -> Text:
    """The printed report at `width` columns, with its colours."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=max(40, width),
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        soft_wrap=False,
    )
    render_inspect(report, console)
    return Text.from_ansi(buffer.getvalue().rstrip("\n"))


class OverviewView(VerticalScroll):
    """The report, re-drawn when the width changes."""

    def __init__(self, report: InspectReport) -> None:
        super().__init__(id="overview-view")
        self.report = report
        self.can_focus = True
        self._width = 0

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(id="overview-text")

    def on_resize(self, event: events.Resize) -> None:
        width = event.size.width - 2
        if width != self._width:
            self._width = width
            self.query_one("#overview-text", Static).update(rendered(self.report, width))


VIEW = ReportView(id="overview", title="Overview", build=inspect_report, widget=OverviewView)
