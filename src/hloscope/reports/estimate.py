"""The `profile --for` report: where a step's time would go on the TPU or GPU `--for`
names, estimated from the compiler's own cost model and published figures, never
measured (`analyses.estimate`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hloscope.reports.common import Timings, lowered_frames, stage_timings
from hloscope.reports.entry import ReportEntry
from hloscope.source_text import line_texts
from hloscope.stages import Source

if TYPE_CHECKING:
    from hloscope.analyses.estimate import EstimateAnalysis
    from hloscope.hardware_figures import Figures
    from hloscope.sources.loader import Loaded, LoadOptions


@dataclasses.dataclass(frozen=True)
class EstimateReport:
    """A step's time on the target, estimated: by kernel, collective and user line."""

    source: Source
    module: str | None
    target: str
    """The `--for` spec: `tpu:v5e:2x4`."""
    device: str
    """The device, in words."""
    analysis: EstimateAnalysis
    line_texts: Mapping[str, str]
    timings: Timings
    notes: tuple[str, ...]


ESTIMATED_NOTE = "estimated, not measured"


def estimate_report(loaded: Loaded, figures: Figures | None = None) -> EstimateReport:
    """Estimate a program compiled for a platform (`Loaded.compilation` made for
    `--for`): its kernels, collectives and lines, with `figures` (by default the
    published ones of the platform)."""
    from hloscope.analyses.estimate import analyze_estimate
    from hloscope.analyses.fusions import analyze_fusions
    from hloscope.analyses.kernels import program_kernels
    from hloscope.errors import HloscopeError
    from hloscope.hardware_figures import figures_for
    from hloscope.sources.estimate import compiled_kernel_costs

    target = loaded.options.compile_for
    if target is None:
        raise HloscopeError(
            "an estimate is of a program compiled for a platform: give --for",
            where=loaded.label,
        )
    figures = figures or figures_for(target)
    computations = program_kernels(loaded.module)
    costs = compiled_kernel_costs(
        loaded,
        (
            kernel.name
            for computation in computations
            for kernel in computation.kernels
            if kernel.runs_kernel and not kernel.collectives
        ),
    )
    fusions = analyze_fusions(
        loaded.module, source_root=os.getcwd(), lowered=lowered_frames(loaded)
    )
    compilation = loaded.compilation
    cost = compilation.cost if compilation is not None else None
    program_flops = cost.get("flops") if cost else None
    analysis = analyze_estimate(
        loaded.module,
        computations,
        costs,
        figures,
        fusions,
        program_flops=program_flops,
        slices=target.slices,
    )
    notes = loaded.notes
    if analysis.unknown_trip_counts:
        notes += (
            f"{len(analysis.unknown_trip_counts)} kernels sit in loops of no known trip "
            f"count, counted once ({', '.join(analysis.unknown_trip_counts[:3])})",
        )
    if analysis.uncosted:
        notes += (
            f"XLA's cost analysis could not read {len(analysis.uncosted)} kernels alone "
            f"({', '.join(analysis.uncosted[:3])}): their roofline counts their operands' "
            "and result's bytes, no flops",
        )
    if analysis.unknown_costs:
        notes += (
            f"XLA's cost analysis does not know the cost of {len(analysis.unknown_costs)} "
            f"kernels ({', '.join(analysis.unknown_costs[:3])}: it says -1): their flops "
            "and bytes are null and count nothing",
        )
    if (
        analysis.cost_analysis_flops is not None
        and analysis.unknown_trip_counts == ()
        and (analysis.cost_analysis_flops < analysis.flops * 0.99)
    ):
        notes += (
            f"XLA's cost analysis of the whole program says {analysis.cost_analysis_flops:.4g} "
            "flops: it counts each loop's body once; the step's flops count every iteration",
        )
    sources = [op.user_source for op in analysis.ops] + [
        s for op in analysis.ops for s in op.sources
    ]
    return EstimateReport(
        source=loaded.source,
        module=loaded.module.name,
        target=target.spec,
        device=target.description or target.name,
        analysis=analysis,
        line_texts=line_texts(s for s in sources if s is not None),
        timings=stage_timings(loaded),
        notes=notes,
    )


def estimate_target(target: str, options: LoadOptions) -> EstimateReport:
    """`profile TARGET --for SPEC`: load the target compiled for the platform and
    estimate it."""
    from hloscope.hardware_figures import figures_for
    from hloscope.sources.estimate import estimate_loaded

    # The figures first: a platform without them is refused before compiling.
    figures = figures_for(options.compile_for) if options.compile_for else None
    return estimate_report(estimate_loaded(target, options), figures)


ENTRY = ReportEntry(
    report=EstimateReport,
    json="hloscope.render.estimate_json:estimate_json",
    text="hloscope.render.text.estimate:render_estimate",
)
