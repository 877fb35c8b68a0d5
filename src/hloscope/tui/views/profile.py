"""The Profile tab: where the run time of the optimized module goes, as `hloscope
profile` reports it: the time per run and how much of it the instructions take, your
lines by the time of the instructions they made, and the instructions by time. Enter
on an instruction shows it in the IR tab (of the optimized module); enter on a line
shows its instructions, the one that took most time first.

The report runs your program (a warm-up, then the measured runs), so it is built
when asked for, in a worker; on a lowered module the tab offers to compile first,
as `c` does, since the instructions it names are the optimized module's."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from hloscope.ir.model import Module
from hloscope.render.text.profile import (
    coverage_text,
    duration,
    inputs_text,
    percent,
    runs_text,
)
from hloscope.render.text.source_lines import SourceColumn
from hloscope.reports import (
    EstimateReport,
    ProfileReport,
    estimate_report,
    loaded_profile_report,
)
from hloscope.sources.loader import Loaded
from hloscope.tui.views.base import ReportView, RunView
from hloscope.tui.views.line_times import instruction_jumps, line_times_lines
from hloscope.tui.widgets.report_list import (
    Column,
    Line,
    ReportList,
    Row,
    blank,
    notes_lines,
    table,
)

SOURCES_WIDTH = 40
"""Cells of the source lines column: whole entries that fit, then `… N more`."""

NO_OP = "not in the module shown (the trace names an instruction it does not hold)"


def can_profile(loaded: Loaded) -> bool:
    """Whether there is a program to run: an entrypoint's jitted function with its
    example arguments, or a dump's module before optimizations (run on inputs made for
    its parameters' shapes). A stage given as it is (a `Lowered`, an Exported
    artifact) has nothing to call it with; an optimized module read as it is, nothing
    to compile."""
    lowering = loaded.lowering
    if lowering is not None:
        return lowering.runnable is not None
    return loaded.program is not None


def profile_lines(report: ProfileReport, module: Module) -> list[Line]:
    analysis = report.analysis
    jump = instruction_jumps(module)
    lines: list[Line] = []
    lines += line_times_lines("Your lines by time", analysis.lines, report.line_texts, jump, NO_OP)
    lines.append(blank())
    sources = SourceColumn(analysis.ops)
    op_rows = [
        Row(
            [
                duration(op.seconds),
                percent(op.share),
                str(op.calls),
                op.name,
                op.kind,
                sources.fitted(op, SOURCES_WIDTH),
            ],
            jump=jump((op.name,), op.name),
            note=f"{op.name}: {NO_OP}",
        )
        for op in analysis.ops
    ]
    lines += table(
        f"Instructions by time ({len(analysis.ops)}): self time per run, the mean over the runs",
        [
            Column("time", right=True, width=10),
            Column("share", right=True, width=7),
            Column("calls", right=True, width=8),
            Column("instruction", width=40),
            Column("kind", width=20),
            Column(sources.header(name_file=True), width=SOURCES_WIDTH),
        ],
        op_rows,
    )
    if report.notes:
        lines += [blank(), *notes_lines(report.notes)]
    return lines


def header_text(report: ProfileReport) -> Text:
    """The time per run, the instructions' share of it, and the inputs, as the text
    report's header says them."""
    analysis = report.analysis
    text = Text(f"time per run  {runs_text(analysis)}", style="bold")
    text.append(f"\ninstructions  {coverage_text(analysis)}", style="")
    text.append(f"\ninputs        {inputs_text(analysis.inputs)}", style="")
    return text


class ProfileView(Vertical):
    """The profile report; rows lead to their instructions in the IR; `r` runs the
    program again (after editing the code, or to see the times move)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "run_again", "Run the profile again", show=True),
    ]

    def action_run_again(self) -> None:
        self.post_message(RunView("profile"))

    def __init__(self, report: ProfileReport, module: Module) -> None:
        super().__init__(id="profile-view", classes="report-view")
        self.report = report
        self.module = module

    def compose(self) -> ComposeResult:
        yield Static(header_text(self.report), classes="report-header")
        yield ReportList(profile_lines(self.report, self.module), id="profile-list")


def profile_widget(report: ProfileReport | EstimateReport, loaded: Loaded) -> Vertical:
    if isinstance(report, EstimateReport):
        from hloscope.tui.views.estimate import EstimateView

        return EstimateView(report, loaded.module)
    return ProfileView(report, loaded.module)


def measured_or_estimated(loaded: Loaded) -> ProfileReport | EstimateReport:
    """Under `--for`, the estimate for that platform (nothing runs); else the
    program run here under JAX's profiler."""
    if loaded.options.compile_for is not None:
        return estimate_report(loaded)
    return loaded_profile_report(loaded)


VIEW = ReportView(
    id="profile",
    title="Profile",
    build=measured_or_estimated,
    widget=profile_widget,
    applies=can_profile,
    optimized=True,
    on_demand=(
        "Run your function under JAX's profiler (this runs your code: a warm-up run, "
        "then as many runs as fit in about two seconds, on its example arguments; a "
        "dump runs in a child process on inputs made for its parameters), and show "
        "where the run time goes: per line of yours and per XLA instruction. Under "
        "--for, nothing runs: the step is estimated for that platform."
    ),
)
