"""The Profile tab: where the run time of the optimized module goes, as `hloscope
profile` reports it: the time per run and how much of it the instructions take, your
lines by the time of the instructions they made, and the instructions by time. Enter
on an instruction shows it in the IR tab (of the optimized module); enter on a line
shows its instructions, the one that took most time first.

The report runs your program (a warm-up, then the measured runs), so it is built
when asked for, in a worker; on a lowered module the tab offers to compile first,
as `c` does, since the instructions it names are the optimized module's."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from hloscope.ir.model import Module
from hloscope.render.text.common import short_source
from hloscope.render.text.profile import (
    INSTRUCTIONS_WIDTH,
    coverage_text,
    duration,
    inputs_text,
    instruction_names,
    percent,
    runs_text,
)
from hloscope.render.text.source_lines import SourceColumn, elide_source
from hloscope.reports import (
    EstimateReport,
    ProfileReport,
    estimate_report,
    loaded_profile_report,
)
from hloscope.sources.loader import Loaded
from hloscope.tui.views.base import ReportView, RunView
from hloscope.tui.widgets.report_list import (
    Column,
    Jump,
    Line,
    ReportList,
    Row,
    blank,
    notes_lines,
    table,
)

SOURCES_WIDTH = 40
"""Cells of the source lines column: whole entries that fit, then `… N more`."""
LINE_WIDTH = 40
"""Cells of the line column of the lines table."""
if TYPE_CHECKING:
    from hloscope.analyses.estimate import EstimatedLine
    from hloscope.analyses.profile import ProfiledLine

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


def _ops_by_name(module: Module) -> Mapping[str, int]:
    """The op of each HLO instruction name in the module shown. The last op of a
    name is the one that runs: copies of fused computations the conversion leaves
    come first (as for the Memory tab's buffers)."""
    return {op.hlo_name: op.id for op in module.ops if op.hlo_name is not None}


JumpTo = Callable[[Sequence[str], str], Callable[[], Jump | None]]
"""A row's jump to the ops of XLA instructions (by name), labelled."""


def instruction_jumps(module: Module) -> JumpTo:
    """Jumps to the ops of instructions of `module`, by name; the names are looked up
    when a row is chosen, not when the tab is drawn: a large module's tab costs
    nothing until used."""
    ops_by_name = functools.cache(lambda: _ops_by_name(module))

    def jump(names: Sequence[str], label: str) -> Callable[[], Jump | None]:
        def found() -> Jump | None:
            ids = tuple(ops_by_name()[n] for n in names if n in ops_by_name())
            return Jump(ids, label) if ids else None

        return found

    return jump


def line_times_lines(
    title: str,
    lines: Sequence[ProfiledLine | EstimatedLine],
    line_texts: Mapping[str, str],
    jump: JumpTo,
    note: str = NO_OP,
) -> list[Line]:
    """Your lines (measured or estimated) by time, with their code and instructions,
    each row leading to its instructions (`note` where none is in the module)."""
    rows = [
        Row(
            [
                duration(line.seconds),
                percent(line.share),
                # A long path loses its middle, never its line number.
                elide_source(short_source(line.source), LINE_WIDTH)
                if line.source
                else Text("(no line of yours)", style="dim"),
                Text(line_texts.get(line.source or "", ""), style="cyan"),
                instruction_names(line.ops),
            ],
            jump=jump(line.ops, short_source(line.source) or "no line of yours"),
            note=note,
        )
        for line in lines
    ]
    return table(
        f"{title} ({len(lines)})",
        [
            Column("time", right=True, width=10),
            Column("share", right=True, width=7),
            Column("line", width=LINE_WIDTH),
            Column("code", width=50),
            Column("instructions", width=INSTRUCTIONS_WIDTH),
        ],
        rows,
    )


def profile_lines(report: ProfileReport, module: Module) -> list[Line]:
    analysis = report.analysis
    jump = instruction_jumps(module)
    lines: list[Line] = []
    lines += line_times_lines("Your lines by time", analysis.lines, report.line_texts, jump)
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
