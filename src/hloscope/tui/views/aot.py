"""The AOT check tab, for entrypoints: the direct call against the AOT path, as
`hloscope aot-check` reports it (the verdict, what the AOT path lowered and why,
each difference with its likely cause, the checks and the results).

The check runs the user's code twice (once as called, once through
`.lower().compile()`), so it runs only when asked, in a worker, and its report is
kept for the target whichever module the browser shows."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType

from hloscope import reports
from hloscope.render.text.aot import render_aot_check
from hloscope.reports import AotReport
from hloscope.sources import loader
from hloscope.sources.loader import Loaded
from hloscope.tui.views.base import ReportView, RunView
from hloscope.tui.views.overview import RenderedView


def is_entrypoint(loaded: Loaded) -> bool:
    return loaded.source.kind == "entrypoint"


def check_aot(loaded: Loaded) -> AotReport:
    """Run the target as called and through its AOT path (with the example arguments
    it was loaded with) and compare."""
    options = loader.LoadOptions(
        args=loaded.options.args,
        args_factory=loaded.options.args_factory,
        compile_for=loaded.options.compile_for,  # refused: running needs the device
    )
    return reports.aot_check_report(loader.load_runs(loaded.source.target, options))


class AotView(RenderedView):
    """The `aot-check` report; `r` runs the check again (after editing the code)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "run_again", "Run the AOT check again", show=True),
    ]

    def action_run_again(self) -> None:
        self.post_message(RunView("aot"))

    def __init__(self, report: AotReport) -> None:
        super().__init__(report, render_aot_check, id="aot-view")


def aot_widget(report: AotReport, _loaded: Loaded) -> AotView:
    return AotView(report)


VIEW = ReportView(
    id="aot",
    title="AOT check",
    build=check_aot,
    widget=aot_widget,
    applies=is_entrypoint,
    on_demand=(
        "The AOT check runs your function twice: once as it is called, once through "
        ".lower(...).compile() (the AOT path), on the same inputs, and compares what "
        "each compiled and returned."
    ),
    runs_the_program="aot-check",
)
