"""`hloscope profile --for` as text: the estimated step, the figures it used once, then
your lines, the kernels and the collectives by estimated time. Every heading says it
is an estimate, not a measurement."""

from __future__ import annotations

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analyses.estimate import EstimateAnalysis
from hloscope.render.text.common import (
    clip,
    describe_source,
    header_table,
    notes_group,
    simple_table,
    source_text,
    timings_text,
)
from hloscope.render.text.profile import duration, line_times_table, percent
from hloscope.reports.estimate import ESTIMATED_NOTE, EstimateReport
from hloscope.units import counted, human_bytes

MAX_OP_ROWS = 25
MAX_COLLECTIVE_ROWS = 15
NAME_WIDTH = 32
KIND_WIDTH = 16


def _rate(value: float) -> str:
    for unit, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} "


def figures_text(analysis: EstimateAnalysis) -> str:
    """`clock 1.5 GHz · peak 197 TFLOP/s · HBM 810 GB/s · ICI 45 GB/s a link, one way`."""
    figures = analysis.figures
    parts = []
    if figures.clock_hz:
        parts.append(f"clock {figures.clock_hz / 1e9:.3g} GHz")
    parts.append(f"peak {_rate(figures.peak_flops)}FLOP/s (bf16)")
    parts.append(f"HBM {_rate(figures.hbm_bytes_per_second)}B/s")
    link = "ICI" if figures.platform == "tpu" else "NVLink"
    where = "a link" if figures.platform == "tpu" else "a GPU"
    parts.append(f"{link} {_rate(figures.interconnect_bytes_per_second)}B/s {where}, one way")
    if figures.dcn_bytes_per_second:
        parts.append(f"DCN {_rate(figures.dcn_bytes_per_second)}B/s a chip")
    return " · ".join(parts)


def step_text(analysis: EstimateAnalysis) -> str:
    """The step's time, its parts, and its utilization: MFU of the model's flops (not
    known without them), HFU of the flops it executes."""
    utilization = ""
    if analysis.hfu is not None:
        mfu = percent(analysis.mfu) if analysis.mfu is not None else "not known"
        utilization = f" · MFU {mfu} · HFU {percent(analysis.hfu)}"
    return (
        f"{duration(analysis.seconds)} a step ({ESTIMATED_NOTE}): compute "
        f"{duration(analysis.compute_seconds)} + exposed communication "
        f"{duration(analysis.exposed_communication_seconds)} (of "
        f"{duration(analysis.communication_seconds)}){utilization}"
    )


def model_flops_text(analysis: EstimateAnalysis) -> str:
    """The model's flops, MFU's, and where they come from."""
    if analysis.model_flops is None:
        return "not known (see the notes): MFU needs them"
    where = {
        "given": "given with --model-flops, over the devices",
        "no recomputation": "the flops executed: the step recomputes nothing",
        "saving everything": "the step compiled with every jax.checkpoint saving everything",
    }[analysis.model_flops_from or "given"]
    return f"{analysis.model_flops:.4g} a step per device ({where})"


def from_text(analysis: EstimateAnalysis) -> str:
    """What the estimate is made of: the compiler's cycles only where it wrote some (a
    GPU compiler writes none)."""
    kernels = (
        "the compiler's estimated cycles where it wrote them, else a roofline of XLA's "
        "cost analysis"
        if any(op.basis == "compiler" for op in analysis.ops)
        else "a roofline of XLA's cost analysis of each kernel (the compiler wrote no "
        "estimate of its own)"
    )
    return (
        f"{kernels}; collectives over the interconnect by the ring algorithm; overlap "
        "from the compiled schedule"
    )


NEGLIGIBLE_SECONDS = 0.5e-9
"""Kernels under this a step (`0 ns` as shown: a scalar's add, a flag's compare) are
folded into one row of the table."""


def render_estimate(report: EstimateReport, console: Console) -> None:
    analysis = report.analysis
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(report.source.target, style="bold")),
        ("source", describe_source(report.source)),
        ("module", report.module or "(unnamed)"),
        ("estimate", Text(step_text(analysis), style="bold")),
        ("from", from_text(analysis)),
        (
            "flops",
            f"{analysis.flops:.4g} a step per device, executed: HFU's (XLA's cost analysis "
            "of each kernel, times its runs; recomputation included)",
        ),
        ("model flops", model_flops_text(analysis)),
        ("figures", f"{report.device}: {figures_text(analysis)}"),
        ("cited", analysis.figures.source),
        ("timings", timings_text(report.timings)),
    ]
    console.print(header_table(rows))
    console.print()
    console.print(lines_table(report))
    console.print()
    console.print(ops_table(analysis))
    if analysis.collectives:
        console.print()
        console.print(collectives_table(analysis))
    notes = notes_group(report.notes)
    if notes is not None:
        console.print(notes)


def lines_table(report: EstimateReport) -> Table:
    """Your lines by estimated time, with their code, as a measured profile's."""
    return line_times_table(
        "Your lines by estimated time", report.analysis.lines, report.line_texts
    )


def ops_table(analysis: EstimateAnalysis) -> Table:
    timed = [op for op in analysis.ops if op.seconds >= NEGLIGIBLE_SECONDS]
    negligible = [op for op in analysis.ops if op.seconds < NEGLIGIBLE_SECONDS]
    shown = timed[:MAX_OP_ROWS]
    table = simple_table(
        "Instructions by estimated time",
        [
            ("time", "right", True),
            ("share", "right", True),
            ("calls", "right", True),
            ("instruction", "left", True),
            ("kind", "left", True),
            ("cycles", "right", True),
            ("basis", "left", True),
            ("bound", "left", True),
        ],
    )
    for op in shown:
        table.add_row(
            duration(op.seconds),
            percent(op.share),
            str(op.calls),
            clip(op.name, NAME_WIDTH),
            clip(op.kind, KIND_WIDTH),
            str(op.cycles) if op.cycles is not None else "",
            op.basis,
            op.bound,
        )
    if negligible:
        table.add_row(
            duration(sum(op.seconds for op in negligible)),
            percent(sum(op.share for op in negligible)),
            str(sum(op.calls for op in negligible)),
            f"{counted(len(negligible), 'instruction')} under 1 ns",
            "",
            "",
            "",
            "",
        )
    captions = [
        "time: per step, all calls; cycles: the compiler's estimate of one call; share: "
        "of the step (a collective's, its exposed part)"
    ]
    if len(timed) > MAX_OP_ROWS:
        captions.append(f"… {len(timed) - MAX_OP_ROWS} more (--json lists all)")
    table.caption = "\n".join(captions)
    table.caption_justify = "left"
    return table


def collectives_table(analysis: EstimateAnalysis) -> Table:
    shown = sorted(analysis.collectives, key=lambda c: -c.exposed_seconds)[:MAX_COLLECTIVE_ROWS]
    table = simple_table(
        "Collectives, estimated",
        [
            ("time", "right", True),
            ("exposed", "right", True),
            ("", "left", True),
            ("collective", "left", True),
            ("op", "left", True),
            ("n", "right", True),
            ("moved", "right", True),
            ("line", "left", True),
        ],
    )
    for c in shown:
        verdict = "hidden" if c.hidden else ("exposed" if c.asynchronous else "sync")
        table.add_row(
            duration(c.seconds),
            duration(c.exposed_seconds) if c.exposed_seconds > 0 else "0",
            verdict,
            clip(c.name, 24),
            c.op,
            str(c.group_size) if c.group_size else "",
            human_bytes(c.bytes),
            source_text(c.user_source) if c.user_source else "",
        )
    captions = [
        "n: devices in its groups; moved: bytes per device per step (all calls) by the ring "
        "algorithm; exposed: what "
        "the kernels scheduled between its start and done do not cover; sync: synchronous, "
        "exposed whole"
    ]
    if len(analysis.collectives) > MAX_COLLECTIVE_ROWS:
        captions.append(
            f"… {len(analysis.collectives) - MAX_COLLECTIVE_ROWS} more (--json lists all)"
        )
    table.caption = "\n".join(captions)
    table.caption_justify = "left"
    return table
