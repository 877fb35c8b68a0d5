"""The Overview tab: the `inspect` report (structure, call graph, op counts,
timings, cost), drawn by the same renderer as `hloscope inspect --print`, so the
two never disagree and whatever that report gains shows here too."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from hloscope.render.text.inspect import render_inspect
from hloscope.reports import InspectReport, inspect_report
from hloscope.sources.loader import Loaded
from hloscope.tui.views.base import ReportView

Renderer = Callable[[Any, Console], None]


def rendered(report: Any, width: int, render: Renderer = render_inspect) -> Text:
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
    render(report, console)
    return Text.from_ansi(buffer.getvalue().rstrip("\n"))


class RenderedView(VerticalScroll):
    """A report as its command prints it, re-drawn when the width changes."""

    def __init__(self, report: Any, render: Renderer, *, id: str) -> None:
        super().__init__(id=id, classes="rendered-view")
        self.report = report
        self.render_report = render
        self.can_focus = True
        self._width = 0

    def compose(self) -> ComposeResult:
        # `overview-view` draws its report in `overview-text`.
        yield Static(
            id=(self.id or "report").replace("-view", "") + "-text", classes="rendered-text"
        )

    def on_resize(self, event: events.Resize) -> None:
        # Its padding and its scrollbar's gutter (kept whether the report scrolls or
        # not): drawn wider, a table's widest lines would wrap, borders included.
        width = event.size.width - 2 - self.styles.scrollbar_size_vertical
        if width != self._width:
            self._width = width
            self.query_one(".rendered-text", Static).update(
                rendered(self.report, width, self.render_report)
            )


class OverviewView(RenderedView):
    """The `inspect` report."""

    def __init__(self, report: InspectReport) -> None:
        super().__init__(report, render_inspect, id="overview-view")


def overview_widget(report: InspectReport, _loaded: Loaded) -> OverviewView:
    return OverviewView(report)


VIEW = ReportView(id="overview", title="Overview", build=inspect_report, widget=overview_widget)
