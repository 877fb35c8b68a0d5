"""The Memory tab: what is live at the memory peak, as `hloscope memory` reports it:
XLA's totals and peak, the live bytes over the schedule as a chart, and the buffers
live at the peak, largest first (each memory space apart, where there are
several). Enter on a buffer shows the op that defines it in the IR tab (of the
optimized module). The report compiles the target again with XLA dumping its
buffer assignment (or reads a dump folder's files), so it is built when asked for;
on a lowered module the tab offers to compile first, as `c` does."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from hloscope.analyses.memory import LiveBuffer
from hloscope.ir.model import Module
from hloscope.render.text.common import short_source
from hloscope.render.text.memory import (
    KIND_STYLES,
    donated_text,
    fit_text,
    peak_text,
    profile_chart,
    shape_text,
    space_peak_text,
    totals_text,
)
from hloscope.render.text.source_lines import SourceColumn
from hloscope.reports import MemoryReport, loaded_memory_report
from hloscope.sources.loader import Loaded
from hloscope.tui.views.base import ReportView
from hloscope.tui.widgets.report_list import (
    Column,
    Jump,
    Line,
    ReportList,
    Row,
    blank,
    heading,
    notes_lines,
    table,
    text_line,
)
from hloscope.units import human_bytes

CHART_WIDTH = 72


def _defining_op(module: Module, buffer: LiveBuffer) -> Jump | None:
    """The op of the module shown that defines a buffer, found by its HLO name (the
    report may come from another compilation of the same module)."""
    found = [op.id for op in module.ops if op.hlo_name == buffer.instruction]
    if not found:
        return None
    # The last op of a name is the one that runs: copies of fused computations the
    # conversion leaves come first.
    return Jump((found[-1],), buffer.instruction)


SOURCES_WIDTH = 40
"""Cells of the source lines column, before the op name so that a narrow terminal
shows it: whole entries that fit, then `… N more`."""


def _buffer_table(title: str, buffers: Sequence[LiveBuffer], module: Module) -> list[Line]:
    rows = []
    sources = SourceColumn(buffers)
    for buffer in buffers:
        name = buffer.instruction if buffer.name.endswith("{}") else buffer.name

        def jump(buffer: LiveBuffer = buffer) -> Jump | None:
            return _defining_op(module, buffer)

        rows.append(
            Row(
                [
                    human_bytes(buffer.bytes),
                    Text(buffer.kind, style=KIND_STYLES.get(buffer.kind, "")),
                    shape_text(buffer.shape),
                    (f"{name} ({buffer.path})" if buffer.path else name)
                    + (f", in {buffer.shares.removesuffix('{}')}'s bytes" if buffer.shares else ""),
                    sources.fitted(buffer, SOURCES_WIDTH),
                    buffer.op_name or "-",
                ],
                jump=None if buffer.op_id is None else jump,
                note=""
                if buffer.op_id is not None
                else f"{buffer.name}: no op defines it here (a parameter: see the Parameters tab)",
            )
        )
    return table(
        title,
        [
            Column("bytes", right=True, width=12),
            Column("kind", width=12),
            Column("shape", width=32),
            Column("instruction", width=40, names=True),
            Column(sources.header(name_file=True), width=SOURCES_WIDTH),
            Column("op name", width=48),
        ],
        rows,
    )


def memory_lines(report: MemoryReport, module: Module) -> list[Line]:
    analysis = report.analysis
    default = analysis.default_space
    length = analysis.schedule_length
    lines: list[Line] = [text_line(Text(f"totals  {totals_text(analysis)}"))]
    if default is None:
        lines.append(text_line(Text(f"peak    {peak_text(analysis)}", style="bold")))
    else:
        # Each memory space apart (`hloscope memory`'s text says why).
        lines.append(
            text_line(
                Text(f"peak    {default.label}: {space_peak_text(default, length)}", style="bold")
            )
        )
        lines += [
            text_line(f"        {s.label}: {space_peak_text(s, length)}")
            for s in analysis.memory_spaces
            if s is not default
        ]
    if report.fit is not None:
        lines.insert(0, text_line(Text("fits    ").append(fit_text(report.fit))))
    if analysis.donated:
        donated = ", ".join(donated_text(d) for d in analysis.donated)
        lines.append(text_line(f"donated {donated}"))
    shown: list[LiveBuffer] = []
    pictures = (
        [("", analysis.profile, analysis.peak_index, "the peak", analysis.buffers_at_peak)]
        if default is None
        else [
            (f" of {s.label}", s.profile, s.peak_index, "its peak", s.buffers_at_peak)
            for s in analysis.memory_spaces
        ]
    )
    for of, profile, peak_index, where, buffers in pictures:
        chart = profile_chart(profile, peak_index, length, width=CHART_WIDTH)
        if chart:
            lines.append(blank())
            lines.append(heading(f"Live bytes{of} over the schedule"))
            lines += [text_line(line) for line in chart]
        lines.append(blank())
        lines += _buffer_table(f"Buffers{of} live at {where} ({len(buffers)})", buffers, module)
        shown += buffers
    busiest = analysis.busiest
    if busiest is not None:
        at_peak = {b.name for b in analysis.buffers_at_peak}
        more = [b for b in busiest.buffers if b.name not in at_peak]
        shown += more
        where_busiest = (
            f"{busiest.index} ({busiest.instruction})" if busiest.instruction else busiest.index
        )
        lines.append(blank())
        lines += _buffer_table(
            f"Also live at position {where_busiest}, where XLA's live ranges hold "
            f"{human_bytes(busiest.bytes)} ({len(more)})",
            more,
            module,
        )
    named = dict.fromkeys(s for b in shown for s in b.sources)
    code = [(s, report.line_texts[s]) for s in named if s in report.line_texts]
    if code:
        lines.append(blank())
        lines.append(heading("Lines"))
        for source, text in code:
            line = Text(f"{short_source(source)}  ", style="cyan")
            line.append(text)
            lines.append(text_line(line))
    if report.notes:
        lines += [blank(), *notes_lines(report.notes)]
    return lines


class MemoryView(Vertical):
    """The memory report; buffer rows lead to their defining ops in the IR."""

    def __init__(self, report: MemoryReport, module: Module) -> None:
        super().__init__(id="memory-view", classes="report-view")
        self.report = report
        self.module = module

    def compose(self) -> ComposeResult:
        analysis = self.report.analysis
        default = analysis.default_space
        summary = (
            f"memory  peak {human_bytes(analysis.peak_bytes)} at {analysis.peak_index} · "
            f"{len(analysis.buffers_at_peak)} buffers live there"
            if default is None
            else f"memory  peak of {default.label} {human_bytes(default.peak_bytes)} at "
            f"{default.peak_index} · {len(default.buffers_at_peak)} buffers live there"
        )
        yield Static(Text(summary, style="bold"), classes="report-header")
        yield ReportList(memory_lines(self.report, self.module), id="memory-list")


def memory_widget(report: MemoryReport, loaded: Loaded) -> MemoryView:
    return MemoryView(report, loaded.module)


VIEW = ReportView(
    id="memory",
    title="Memory",
    build=loaded_memory_report,
    widget=memory_widget,
    optimized=True,
    on_demand=(
        "Compile the target with XLA dumping its buffer assignment (or read the dump "
        "folder's), and show what is live at the memory peak."
    ),
)
