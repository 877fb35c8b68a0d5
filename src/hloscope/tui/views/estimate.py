"""The Profile tab under `--for`: where a step's time would go on that TPU or GPU,
estimated (as `hloscope profile --for` reports it), never measured: the estimated
step and the figures in the header, then your lines, the instructions (with the
compiler's cycles, basis and bound) and the collectives (exposed or hidden). Enter on
a row shows its instructions in the IR tab."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from hloscope.ir.model import Module
from hloscope.render.text.common import short_source
from hloscope.render.text.estimate import figures_text, step_text
from hloscope.render.text.profile import duration, percent
from hloscope.reports.estimate import EstimateReport
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

NO_OP = "not in the module shown"


def estimate_lines(report: EstimateReport, module: Module) -> list[Line]:
    analysis = report.analysis
    jump = instruction_jumps(module)
    lines: list[Line] = []
    lines += line_times_lines(
        "Your lines by estimated time", analysis.lines, report.line_texts, jump, NO_OP
    )
    lines.append(blank())
    lines += table(
        f"Instructions by estimated time ({len(analysis.ops)}): per step, all calls",
        [
            Column("time", right=True, width=10),
            Column("share", right=True, width=7),
            Column("calls", right=True, width=6),
            Column("instruction", width=40, names=True),
            Column("kind", width=20),
            Column("cycles", right=True, width=10),
            Column("basis", width=13),
            Column("bound", width=8),
        ],
        [
            Row(
                [
                    duration(op.seconds),
                    percent(op.share),
                    str(op.calls),
                    op.name,
                    op.kind,
                    str(op.cycles) if op.cycles is not None else "",
                    op.basis,
                    op.bound,
                ],
                jump=jump((op.name,), op.name),
                note=f"{op.name}: {NO_OP}",
            )
            for op in analysis.ops
        ],
    )
    if analysis.collectives:
        lines.append(blank())
        lines += table(
            f"Collectives, estimated ({len(analysis.collectives)})",
            [
                Column("time", right=True, width=10),
                Column("exposed", right=True, width=10),
                Column("", width=8),
                Column("collective", width=30, names=True),
                Column("op", width=16),
                Column("line", width=40),
            ],
            [
                Row(
                    [
                        duration(c.seconds),
                        duration(c.exposed_seconds) if c.exposed_seconds > 0 else "0",
                        "hidden" if c.hidden else ("exposed" if c.asynchronous else "sync"),
                        c.name,
                        c.op,
                        short_source(c.user_source) if c.user_source else "",
                    ],
                    jump=jump((c.name,), c.name),
                    note=f"{c.name}: {NO_OP}",
                )
                for c in analysis.collectives
            ],
        )
    if report.notes:
        lines += [blank(), *notes_lines(report.notes)]
    return lines


def header_text(report: EstimateReport) -> Text:
    """The estimated step (saying it is estimated) and the figures it used."""
    text = Text(f"estimate  {step_text(report.analysis)}", style="bold")
    text.append(f"\nfigures   {report.device}: {figures_text(report.analysis)}", style="")
    return text


class EstimateView(Vertical):
    """The estimate; rows lead to their instructions in the IR."""

    def __init__(self, report: EstimateReport, module: Module) -> None:
        super().__init__(id="profile-view", classes="report-view")
        self.report = report
        self.module = module

    def compose(self) -> ComposeResult:
        yield Static(header_text(self.report), classes="report-header")
        yield ReportList(estimate_lines(self.report, self.module), id="profile-list")
