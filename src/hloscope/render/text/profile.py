"""`hloscope profile` as text: the time per run, the user's lines by time with their
code, and the XLA instructions by time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analyses.profile import ProfileAnalysis
from hloscope.render.text.common import (
    clip,
    describe_source,
    header_table,
    notes_group,
    plural,
    seconds,
    short_source,
    simple_table,
    source_text,
    timings_text,
)
from hloscope.render.text.source_lines import SourceColumn, fit_entries
from hloscope.reports.profile import ProfileReport, ScriptProfileReport

if TYPE_CHECKING:
    from hloscope.analyses.estimate import EstimatedLine
    from hloscope.analyses.profile import ProfiledLine

MAX_LINE_ROWS = 15
MAX_OP_ROWS = 25
INSTRUCTIONS_WIDTH = 40
"""Characters of a line's instruction names (`instruction_names`), at most."""
MIN_INSTRUCTIONS_WIDTH = 20
"""... and at least, in the text report on a narrow console."""
CODE_WIDTH = 50
"""Characters of a line's code, at most."""


def duration(value: float) -> str:
    """`1.25 s`, `12.3 ms`, `45.0 µs`, `800 ns`: three figures at any scale."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            shown = value / scale
            return f"{shown:.3g} {unit}" if shown < 100 else f"{shown:.0f} {unit}"
    return f"{value * 1e9:.0f} ns"


def percent(share: float) -> str:
    return f"{share * 100:.1f}%"


def runs_text(analysis: ProfileAnalysis) -> str:
    """`median 1.2 ms · min 1.1 ms · max 1.9 ms over 20 runs (1 warm-up)`."""
    times = analysis.seconds_per_run
    return (
        f"median {duration(times.median)} · min {duration(times.min)} · "
        f"max {duration(times.max)} over {plural(analysis.runs, 'run')} "
        f"({analysis.warmup} warm-up, not measured)"
    )


def coverage_text(analysis: ProfileAnalysis) -> str:
    """The instructions' time, the median over the runs as the run time's is:
    `median 1.1 ms a run (92.0% of the run) · around them 95 µs (...)`, or, where their
    self times add up to more than the run, that they overlap."""
    spent = f"median {duration(analysis.op_seconds)} a run"
    if analysis.coverage is None:
        return spent
    if analysis.overlapping:
        return (
            f"{spent} · they overlap: their self times add up to "
            f"{percent(analysis.coverage)} of the run (XLA runs independent instructions "
            "in parallel)"
        )
    return (
        f"{spent} ({percent(analysis.coverage)} of the run) · around them "
        f"{duration(analysis.overhead_seconds)} (dispatch, arguments, waiting for results)"
    )


def instruction_names(names: Sequence[str], width: int = INSTRUCTIONS_WIDTH) -> str:
    """A line's instructions in one line, most time first: whole names that fit in
    `width` characters, then `… N more` (the text report and the browser both)."""
    return fit_entries(names, width)


def render_profile(report: ProfileReport, console: Console) -> None:
    analysis = report.analysis
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(report.source.target, style="bold")),
        ("source", describe_source(report.source)),
        ("module", report.module or "(unnamed)"),
        ("time per run", Text(runs_text(analysis), style="bold")),
        ("instructions", coverage_text(analysis)),
        ("inputs", inputs_text(analysis.inputs)),
        ("timings", timings_text(report.timings)),
    ]
    if analysis.trace_file:
        rows.append(("trace", analysis.trace_file))
    console.print(header_table(rows))
    console.print()
    console.print(lines_table(report, console.width))
    console.print()
    console.print(ops_table(analysis))
    notes = notes_group(report.notes)
    if notes is not None:
        console.print(notes)


def inputs_text(inputs: str) -> str:
    """Where the inputs came from, and what generated values are."""
    if "generated" in inputs:
        return f"{inputs} (values for shapes: seeded random, the same every run)"
    return inputs


def lines_table(report: ProfileReport, width: int | None = None) -> Table:
    """Your lines by the time of the instructions they made, with their code; each
    row on one line of a console `width` wide: the instruction names get what the
    other columns leave (up to `INSTRUCTIONS_WIDTH`), and on a narrow console the
    code gives way too."""
    return line_times_table("Your lines by time", report.analysis.lines, report.line_texts, width)


def line_times_table(
    title: str,
    lines: Sequence[ProfiledLine | EstimatedLine],
    line_texts: Mapping[str, str],
    width: int | None = None,
) -> Table:
    """`lines` (measured or estimated) by time, with their code, as `lines_table`
    says."""
    shown = lines[:MAX_LINE_ROWS]
    codes = [clip(line_texts.get(line.source or "", ""), CODE_WIDTH) for line in shown]
    names_width = INSTRUCTIONS_WIDTH
    if width is not None:
        others = (
            len("time")
            + 4  # `12.3 ms`
            + len("share")
            + 1  # `100.0%`
            + max([len("(no line of yours)")] + [len(short_source(line.source)) for line in shown])
            + max([len("code")] + [len(code) for code in codes])
            + 2 * 5  # each column's padding
        )
        names_width = max(MIN_INSTRUCTIONS_WIDTH, min(INSTRUCTIONS_WIDTH, width - others))
    table = simple_table(
        title,
        [
            ("time", "right", True),
            ("share", "right", True),
            ("line", "left", True),
            # Gives way on a narrow console: its code cut short, on one line.
            ("code", "left", False),
            ("instructions", "left", True),
        ],
    )
    for line, code in zip(shown, codes, strict=True):
        where = (
            source_text(line.source, style="bold")
            if line.source
            else Text("(no line of yours)", style="dim")
        )
        table.add_row(
            duration(line.seconds),
            percent(line.share),
            where,
            Text(code, no_wrap=True, overflow="ellipsis"),
            instruction_names(line.ops, names_width),
        )
    if len(lines) > MAX_LINE_ROWS:
        table.caption = f"… {len(lines) - MAX_LINE_ROWS} more (--json lists all)"
        table.caption_justify = "left"
    return table


def ops_table(analysis: ProfileAnalysis) -> Table:
    """The instructions by self time per run."""
    shown = analysis.ops[:MAX_OP_ROWS]
    sources = SourceColumn(shown)
    table = simple_table(
        "Instructions by time",
        [
            ("time", "right", True),
            ("share", "right", True),
            ("calls", "right", True),
            ("instruction", "left", True),
            ("kind", "left", True),
        ],
    )
    sources.add_to(table)
    for op in shown:
        table.add_row(
            duration(op.seconds),
            percent(op.share),
            str(op.calls),
            op.name,
            op.kind,
            sources.cell(op),
        )
    captions = [
        "time: self time per run, the mean over the runs (a loop's body counts for its own "
        "instructions)",
        sources.caption(),
    ]
    if len(analysis.ops) > MAX_OP_ROWS:
        captions.append(f"… {len(analysis.ops) - MAX_OP_ROWS} more (--json lists all)")
    table.caption = "\n".join(c for c in captions if c)
    table.caption_justify = "left"
    return table


def render_script_profile(report: ScriptProfileReport, console: Console) -> None:
    analysis = report.analysis
    rows: list[tuple[str, RenderableType]] = [
        ("script", Text(report.target, style="bold")),
        ("wall time", seconds(analysis.wall_seconds)),
        ("programs ran", f"{duration(analysis.run_seconds)} in all"),
    ]
    if report.trace_file:
        rows.append(("trace", report.trace_file))
    if report.error:
        rows.append(("raised", Text(report.error, style="red")))
    elif report.exit_code:
        rows.append(("exit code", str(report.exit_code)))
    console.print(header_table(rows))
    console.print()
    table = simple_table(
        "Jitted functions, in the order they first compiled",
        [
            ("function", "left", True),
            ("defined at", "left", True),
            ("calls", "right", True),
            ("compiles", "right", True),
            ("compile time", "right", True),
            ("run time", "right", True),
            ("per call", "right", True),
        ],
    )
    for f in analysis.functions:
        table.add_row(
            Text(f.function, style="bold"),
            source_text(f.source) if f.source else "-",
            str(f.calls),
            str(f.compiles),
            duration(f.compile_seconds),
            duration(f.run_seconds),
            duration(f.seconds_per_call) if f.seconds_per_call is not None else "-",
        )
    eager = analysis.eager
    if eager.compiles or eager.calls:
        table.add_row(
            Text("(ops outside any jit)", style="dim"),
            "-",
            str(eager.calls),
            str(eager.compiles),
            duration(eager.compile_seconds),
            duration(eager.seconds),
            duration(eager.seconds / eager.calls) if eager.calls else "-",
        )
    table.caption = (
        "run time: each call's program from its first instruction's start to its last's "
        "end (Python's dispatch not included); an inner jit called by an outer one runs "
        "inside the outer one's program"
    )
    table.caption_justify = "left"
    console.print(table)
    notes = notes_group(report.notes)
    if notes is not None:
        console.print(notes)
