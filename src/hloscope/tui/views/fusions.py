"""The Fusions tab: what XLA fused in the optimized module, as `hloscope fusions`
reports it: each fusion with its kind, ops and source lines, the ops left unfused,
and per source line what it went into. Enter on a row shows its ops in the IR tab
(a fusion's `mhlo.fusion` op). On a lowered module the tab offers to compile, as
`c` does."""

from __future__ import annotations

from collections import defaultdict

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from hloscope.analyses.fusions import FusionAnalysis
from hloscope.render.text.common import short_source
from hloscope.render.text.fusions import (
    fusion_bytes_text,
    fusion_kind_text,
    fusion_name_text,
    fusion_summary_text,
    line_where_text,
    short_ops,
    unfused_name_text,
    unfused_what_text,
)
from hloscope.render.text.source_lines import SourceColumn, elide_source
from hloscope.reports import FusionsReport, fusions_report
from hloscope.sources.loader import Loaded
from hloscope.tui.views.base import ReportView
from hloscope.tui.widgets.report_list import (
    Column,
    Jump,
    Line,
    ReportList,
    Row,
    blank,
    fixed,
    notes_lines,
    table,
    text_line,
)
from hloscope.units import human_bytes

SOURCES_WIDTH = 40
"""Cells of the source lines column, the second, so that a narrow terminal shows
it: whole entries that fit, then `… N more`."""
LINE_WIDTH = 40
"""Cells of the line column of the source lines table."""


def _ops_by_name(analysis: FusionAnalysis) -> dict[str, list[int]]:
    by_name: dict[str, list[int]] = defaultdict(list)
    for fusion in analysis.fusions:
        by_name[fusion.name].append(fusion.op_id)
    for op in analysis.unfused:
        by_name[op.name].append(op.op_id)
    return by_name


def fusions_lines(report: FusionsReport) -> list[Line]:
    analysis = report.analysis
    lines: list[Line] = []
    if analysis.fusions:
        rows = []
        fusion_sources = SourceColumn(analysis.fusions)
        for fusion in analysis.fusions:
            found = Jump((fusion.op_id,), fusion.name)
            rows.append(
                Row(
                    [
                        fusion_name_text(fusion),
                        fusion_sources.fitted(fusion, SOURCES_WIDTH),
                        fusion_kind_text(fusion),
                        short_ops(fusion.op_counts),
                        ", ".join(fusion.results),
                        fusion_bytes_text(fusion),
                    ],
                    jump=fixed(found),
                )
            )
        lines += table(
            f"Fusions ({len(analysis.fusions)})",
            [
                Column("fusion", width=34, names=True),
                Column(fusion_sources.header(name_file=True), width=SOURCES_WIDTH),
                Column("kind", width=16),
                Column("ops", width=40),
                Column("result", width=24),
                Column("bytes in → out", right=True, width=24),
            ],
            rows,
        )
    if analysis.unfused:
        if lines:
            lines.append(blank())
        rows = []
        unfused_sources = SourceColumn(analysis.unfused)
        for op in analysis.unfused:
            found = Jump((op.op_id,), op.name)
            rows.append(
                Row(
                    [
                        unfused_name_text(op),
                        unfused_sources.fitted(op, SOURCES_WIDTH),
                        op.category,
                        unfused_what_text(op),
                        ", ".join(op.results),
                        human_bytes(op.result_bytes),
                    ],
                    jump=fixed(found),
                )
            )
        lines += table(
            f"Unfused ops ({analysis.unfused_ops})",
            [
                Column("op", width=34, names=True),
                Column(unfused_sources.header(name_file=True), width=SOURCES_WIDTH),
                Column("kind", width=14),
                Column("what", width=34),
                Column("results", width=30),
                Column("bytes", right=True),
            ],
            rows,
        )
    if analysis.lines:
        lines.append(blank())
        by_name = _ops_by_name(analysis)
        rows = []
        for line in analysis.lines:
            ops = tuple(
                sorted(
                    {op_id for name in (*line.fusions, *line.unfused) for op_id in by_name[name]}
                )
            )
            found = Jump(ops, short_source(line.source))
            rows.append(
                Row(
                    [
                        # A long path loses its middle, never its line number.
                        elide_source(short_source(line.source), LINE_WIDTH),
                        Text(report.line_texts.get(line.source, ""), style="cyan"),
                        str(line.fused_ops),
                        str(line.unfused_ops),
                        line_where_text(line, ", ".join),
                    ],
                    jump=fixed(found),
                )
            )
        lines += table(
            f"Source lines ({len(analysis.lines)}): what XLA made of each",
            [
                Column("line", width=LINE_WIDTH),
                Column("code", width=40),
                Column("fused", right=True),
                Column("unfused", right=True),
                Column("in fusions / unfused ops", width=80),
            ],
            rows,
        )
    elif analysis.fusions or analysis.unfused:
        lines.append(blank())
        lines.append(
            text_line("No source lines: this module's ops carry no source locations.", "dim")
        )
    if not analysis.fusions:
        if lines:
            lines.append(blank())
        lines.append(text_line("XLA made no fusions in this module.", "dim"))
    if report.notes:
        lines += [blank(), *notes_lines(report.notes)]
    return lines


class FusionsView(Vertical):
    """The fusions report; rows lead to the fusions (and unfused ops) in the IR."""

    def __init__(self, report: FusionsReport) -> None:
        super().__init__(id="fusions-view", classes="report-view")
        self.report = report

    def compose(self) -> ComposeResult:
        summary = fusion_summary_text(self.report.summary)
        yield Static(Text(f"fusions  {summary}", style="bold"), classes="report-header")
        yield ReportList(fusions_lines(self.report), id="fusions-list")


def fusions_widget(report: FusionsReport, _loaded: Loaded) -> FusionsView:
    return FusionsView(report)


VIEW = ReportView(
    id="fusions",
    title="Fusions",
    build=fusions_report,
    widget=fusions_widget,
    optimized=True,
)
