"""`hloscope memory` as text: XLA's totals, its peak, the live bytes over the
schedule as a chart, and the buffers live at the peak, largest first."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analyses.memory import (
    DeviceFit,
    DonatedBuffer,
    LiveBuffer,
    MemoryAnalysis,
    MemorySpace,
    ProfilePoint,
)
from hloscope.render.text.common import (
    ElidedPath,
    Squeezed,
    clip,
    describe_source,
    elide_middle,
    header_table,
    notes_group,
    plural,
    shape_cell,
    simple_table,
    source_text,
)
from hloscope.render.text.source_lines import SourceColumn
from hloscope.reports import MemoryReport
from hloscope.units import human_bytes

MAX_BUFFER_ROWS = 40
MAX_BUSIEST_ROWS = 12
# A layout (`{1,0}`, `{1,0:S(5)}`) after a shape: the table shows shapes without.
_LAYOUT = re.compile(r"\{[^{}]*\}")
MAX_CODE_LINES = 12
CHART_ROWS = 8
"""Height of the profile chart, in terminal lines."""
CHART_WIDTH = 64
"""Width of the profile chart, in columns."""
_BLOCKS = " ▁▂▃▄▅▆▇█"

TOTAL_LABELS = (
    ("argument_bytes", "arguments"),
    ("output_bytes", "outputs"),
    ("temp_bytes", "temporaries"),
    ("alias_bytes", "aliased (donated)"),
    ("generated_code_bytes", "generated code"),
    ("host_argument_bytes", "host arguments"),
    ("host_output_bytes", "host outputs"),
    ("host_temp_bytes", "host temporaries"),
)

KIND_STYLES = {
    "parameter": "cyan",
    "alias": "magenta",
    "output": "green",
    "temporary": "yellow",
    "constant": "dim",
    "thread-local": "dim",
}


def shape_text(shape: str) -> str:
    """A buffer's shape without its layouts: `f32[1024,1024]`, `(f32[2], f32[2])`."""
    return _LAYOUT.sub("", shape) or "-"


def totals_text(analysis: MemoryAnalysis) -> str:
    """`arguments 4.0 KiB · outputs 4.0 KiB · temporaries 8.0 MiB · ...`; host totals
    only where nonzero."""
    if analysis.totals is None:
        return "unknown (XLA's memory_analysis() is not in a dump folder)"
    parts = []
    for key, label in TOTAL_LABELS:
        value = analysis.totals.get(key)
        if value is None or (key.startswith("host_") and not value):
            continue
        parts.append(f"{label} {human_bytes(value)}")
    return " · ".join(parts)


def peak_text(analysis: MemoryAnalysis) -> str:
    """`8.0 MiB at 5 of 7 (sort.0)`."""
    text = (
        f"{human_bytes(analysis.peak_bytes)} ({analysis.peak_bytes:,} bytes) at position "
        f"{analysis.peak_index} of {analysis.schedule_length}"
    )
    if analysis.peak_instruction:
        text += f" ({analysis.peak_instruction})"
    return text


def space_peak_text(space: MemorySpace, length: int) -> str:
    """`5.3 MiB (5,538,816 bytes) at position 69 of 722 (dynamic-slice.68)`: the most a
    memory space's live ranges hold."""
    text = (
        f"{human_bytes(space.peak_bytes)} ({space.peak_bytes:,} bytes) at position "
        f"{space.peak_index} of {length}"
    )
    if space.peak_instruction:
        text += f" ({space.peak_instruction})"
    return text


def profile_chart(
    profile: Sequence[ProfilePoint],
    peak_index: int,
    length: int,
    rows: int = CHART_ROWS,
    width: int = CHART_WIDTH,
) -> list[Text]:
    """The live bytes over the schedule as columns of block characters, `rows` lines
    high and `width` wide (each column shows the profile point holding its share of
    the schedule), with the bytes at the top, the positions below, and the peak's
    column in red."""
    if not profile:
        return []
    top = max(p.bytes for p in profile) or 1
    width = max(width, 1)
    columns = [profile[min(c * len(profile) // width, len(profile) - 1)] for c in range(width)]
    peak_point = max((p for p in profile if p.index <= peak_index), key=lambda p: p.index)
    label = human_bytes(top)
    margin = len(label) + 1
    lines = []
    for row in range(rows - 1, -1, -1):
        prefix = label if row == rows - 1 else ("0" if row == 0 else "")
        line = Text(prefix.rjust(margin - 1) + "▕", style="dim")
        for point in columns:
            height = round(point.bytes * rows * 8 / top)
            level = min(max(height - row * 8, 0), 8)
            style = "bold red" if point is peak_point else "blue"
            line.append(_BLOCKS[level], style=style)
        lines.append(line)
    axis = Text(" " * margin + "0", style="dim")
    end = str(length - 1)
    axis.append(" " * max(width - 1 - len(end), 1) + end, style="dim")
    lines.append(axis)
    peak_column = next(c for c, p in enumerate(columns) if p is peak_point)
    marker = Text(" " * (margin + peak_column) + f"▲ peak at {peak_index}", style="bold red")
    lines.append(marker)
    return lines


def fit_text(fit: DeviceFit) -> Text:
    """`fits: 9.3 GiB of 16.0 GiB HBM per device (TPU v5 lite), 58%`, `does not fit:
    ...`, or XLA's refusal."""
    needed = human_bytes(fit.required_bytes)
    of = (
        f" of {human_bytes(fit.device_bytes)} {fit.memory_name} per device ({fit.device})"
        if fit.device_bytes
        else f" ({fit.device}: its {fit.memory_name} is not known)"
    )
    share = (
        f", {fit.required_bytes / fit.device_bytes:.0%}"
        if fit.device_bytes and fit.refused is None
        else ""
    )
    if fit.refused is not None:
        return Text(
            f"does not fit: XLA refused it: {fit.refused} (below: what its buffer "
            "assignment held when it gave up)",
            style="bold red",
        )
    if fit.fits is False:
        return Text(f"does not fit: needs {needed}{of}{share}", style="bold red")
    if fit.fits is None:
        return Text(f"needs {needed}{of}")
    return Text(f"fits: {needed}{of}{share}", style="bold green")


FIT_FROM = {
    "memory analysis": "memory_analysis(): arguments + outputs + temporaries + generated "
    "code − aliased",
    "buffer assignment": "the sum of XLA's allocations",
}
"""What `fits` reads, in the words of XLA's figures."""


def _said_whose(text: str, known: object, whose: str) -> str:
    """`text (whose)`, where the figures are known."""
    return f"{text} ({whose})" if known is not None else text


def render_memory(report: MemoryReport, console: Console) -> None:
    analysis = report.analysis
    source = report.source
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(source.target, style="bold")),
        ("source", describe_source(source)),
        ("module", report.module or "(unnamed)"),
        (
            "totals",
            "unknown: XLA refused to compile it, so it made no memory analysis"
            if report.fit is not None and report.fit.refused is not None
            else _said_whose(totals_text(analysis), analysis.totals, "memory_analysis()"),
        ),
    ]
    default = analysis.default_space
    if default is None:
        rows += [
            ("peak", Text(peak_text(analysis), style="bold")),
            ("allocated", f"{human_bytes(analysis.allocated_bytes)} in XLA's allocations"),
        ]
    else:
        # Each memory space is a memory of its own: the default one (a TPU's HBM)
        # first, each other one apart, never added to it.
        rows += [
            (
                "peak",
                Text(
                    f"{default.label}: {space_peak_text(default, analysis.schedule_length)}",
                    style="bold",
                ),
            ),
            (
                "allocated",
                f"{human_bytes(default.allocated_bytes)} in XLA's allocations of {default.label}",
            ),
        ]
        rows += [
            (
                space.label,
                f"peak {space_peak_text(space, analysis.schedule_length)}; "
                f"{human_bytes(space.allocated_bytes)} allocated",
            )
            for space in analysis.memory_spaces
            if space is not default
        ]
    if report.fit is not None:
        fit = fit_text(report.fit)
        if report.fit.refused is None:
            # Which of XLA's figures it is (docs/commands/memory.md says each).
            fit.append(f" ({FIT_FROM.get(report.fit.required_from, report.fit.required_from)})")
        rows.insert(2, ("fits", fit))
    if analysis.donated:
        rows.append(("donated", _donated_text(analysis)))
    if report.files:
        rows.append(("read", ", ".join(report.files)))
    console.print(header_table(rows))

    if default is None:
        _print_picture(
            console,
            "Live bytes over the schedule",
            analysis.profile,
            analysis.peak_index,
            analysis.schedule_length,
        )
        console.print()
        console.print(
            _buffers_table(
                f"Buffers live at the peak ({len(analysis.buffers_at_peak)})",
                analysis.buffers_at_peak,
                report.module,
                MAX_BUFFER_ROWS,
            )
        )
    else:
        for space in analysis.memory_spaces:
            _print_space(console, space, analysis.schedule_length, report.module, default)
    busiest = analysis.busiest
    if busiest is not None:
        at_peak = {b.name for b in analysis.buffers_at_peak}
        more = [b for b in busiest.buffers if b.name not in at_peak]
        where = f"{busiest.index} ({busiest.instruction})" if busiest.instruction else busiest.index
        console.print()
        console.print(
            Text(
                f"Also live at position {where}, where XLA's live ranges hold "
                f"{human_bytes(busiest.bytes)}: {plural(len(more), 'more buffer')}, "
                f"{human_bytes(sum(b.bytes for b in more if b.shares is None))}",
                style="bold",
            )
        )
        console.print(_buffers_table("", more, report.module, MAX_BUSIEST_ROWS))
    lines = _lines_group(report)
    if lines is not None:
        console.print(lines)
    notes = notes_group(report.notes)
    if notes is not None:
        console.print(notes)


def _print_picture(
    console: Console,
    title: str,
    profile: Sequence[ProfilePoint],
    peak_index: int,
    length: int,
) -> None:
    chart = profile_chart(profile, peak_index, length)
    if chart:
        console.print()
        console.print(Text(title, style="bold"))
        for line in chart:
            console.print(line)


def _print_space(
    console: Console, space: MemorySpace, length: int, module: str | None, default: MemorySpace
) -> None:
    """One memory space's picture: its live bytes over the schedule, and what is live
    at its own peak (the default space's listed at length, the others' shorter)."""
    apart = "" if space is default else f", apart from {default.label}"
    _print_picture(
        console,
        f"Live bytes of {space.label} over the schedule{apart}",
        space.profile,
        space.peak_index,
        length,
    )
    console.print()
    console.print(
        _buffers_table(
            f"Buffers of {space.label} live at its peak, position {space.peak_index} "
            f"({len(space.buffers_at_peak)})",
            space.buffers_at_peak,
            module,
            MAX_BUFFER_ROWS if space is default else MAX_BUSIEST_ROWS,
        )
    )


def _buffers_table(
    title: str, buffers: Sequence[LiveBuffer], module: str | None, limit: int
) -> Table:
    shown = buffers[:limit]
    sources = SourceColumn(shown)
    table = simple_table(
        title,
        [
            ("bytes", "right", True),
            ("kind", "left", True),
            # A tuple's shape an element a line (`shape_cell`).
            ("shape", "left", True),
            ("instruction", "left", False),
            # Wraps at its slashes, so the source lines keep their room.
            ("op name", "left", False),
        ],
    )
    sources.add_to(table)
    paths = tuple(b.path for b in shown if b.path)
    for buffer in shown:
        op_name = _op_name_text(buffer.op_name, module)
        # A parameter's op name is its path (JAX names it so): said once, in that
        # column, shortened as every path is.
        as_path = buffer.path is not None and op_name == buffer.path
        table.add_row(
            human_bytes(buffer.bytes),
            _kind_text(buffer),
            shape_cell(shape_text(buffer.shape)),
            # The name gives way to the numbers: wrapped, then elided in its middle.
            Squeezed(_instruction_text(buffer, with_path=not as_path), min_width=24),
            ElidedPath(buffer.path, among=paths)
            if as_path and buffer.path
            else Squeezed(op_name, min_width=16)
            if op_name
            else Text("-", style="dim"),
            sources.cell(buffer),
        )
    captions = [sources.caption()]
    if len(buffers) > limit:
        captions.append(f"… {len(buffers) - limit} more (--json lists all)")
    table.caption = "\n".join(c for c in captions if c) or None
    table.caption_justify = "left"
    return table


def _op_name_text(op_name: str | None, module: str | None) -> str:
    """The JAX op name without the outer jit the whole module is (`jit(f)/` in
    `jit_f`): every op has it."""
    if not op_name:
        return ""
    if module and module.startswith("jit_"):
        outer = f"jit({module[len('jit_') :]})/"
        if op_name.startswith(outer):
            op_name = op_name[len(outer) :]
    return elide_middle(op_name, 40)


MAX_DONATED_LISTED = 4
"""More donated arguments than this are counted in the header, not listed."""


def _donated_text(analysis: MemoryAnalysis) -> str:
    """`logits (4.0 KiB) → result (ynn_fusion)`: each donated argument and the result
    XLA writes into its buffer (the temporaries it held between are a note's). Many
    (an optimizer's state) are counted, with their bytes, and pointed to: a header
    line is not a paragraph."""
    donated = analysis.donated
    if len(donated) <= MAX_DONATED_LISTED:
        return ", ".join(donated_text(d) for d in donated)
    into_results = sum(1 for d in donated if d.result is not None or d.result_name)
    total = human_bytes(sum(d.bytes for d in donated))
    text = f"{plural(len(donated), 'argument')}, {total}"
    if into_results == len(donated):
        text += ", each written over by its result"
    elif into_results:
        text += f", {into_results} written over by their results"
    return text + " (hloscope params: column donated; --json: donated)"


def donated_text(donated: DonatedBuffer) -> str:
    """`logits (4.0 KiB) → result (ynn_fusion)`: the argument, and the result its buffer
    becomes by its output path, with the value XLA writes there."""
    name = donated.path or f"parameter {donated.parameter}"
    result = donated.result_name or (
        f"result {donated.result}" if donated.result is not None else None
    )
    value = _value_name(donated.result_value) if donated.result_value else None
    if result and value:
        result = f"{result} ({value})"
    becomes = f" → {result or value}" if result or value else ""
    return f"{name} ({human_bytes(donated.bytes)}){becomes}"


def _kind_text(buffer: LiveBuffer) -> Text:
    return Text(buffer.kind, style=KIND_STYLES.get(buffer.kind, ""))


def _instruction_text(buffer: LiveBuffer, with_path: bool = True) -> str:
    """`sort.0`, `tuple{1}`; a parameter's pytree path (`with_path`), an unfused op's
    opcode; the value whose bytes it shares (counted once)."""
    name = _value_name(buffer.name)
    if buffer.path and with_path:
        name = f"{name} ({buffer.path})"
    elif buffer.opcode and buffer.opcode != "fusion" and buffer.opcode not in name:
        name = f"{name} ({buffer.opcode})"
    if buffer.shares is not None:
        name += f", in {_value_name(buffer.shares)}'s bytes"
    return name


def _value_name(name: str) -> str:
    """`sort.0` for `sort.0{}`, `tuple{1}` as it is."""
    return name[: -len("{}")] if name.endswith("{}") else name


def _lines_group(report: MemoryReport) -> RenderableType | None:
    """The code of the source lines the table names."""
    analysis = report.analysis
    shown = [*analysis.buffers_at_peak] if not analysis.memory_spaces else []
    for space in analysis.memory_spaces:
        limit = MAX_BUFFER_ROWS if space.color == 0 else MAX_BUSIEST_ROWS
        shown += space.buffers_at_peak[:limit]
    if analysis.busiest is not None:
        at_peak = {b.name for b in analysis.buffers_at_peak}
        more = [b for b in analysis.busiest.buffers if b.name not in at_peak]
        shown += more[:MAX_BUSIEST_ROWS]
    named = dict.fromkeys(s for b in shown for s in b.sources)
    rows = [(source, report.line_texts[source]) for source in named if source in report.line_texts]
    if not rows:
        return None
    lines = [Text("Lines", style="bold")]
    for source, code in rows[:MAX_CODE_LINES]:
        line = Text.assemble(" ", source_text(source), "  ", style="cyan")
        line.append(clip(code, 100), style="")
        lines.append(line)
    return Group(*lines)
