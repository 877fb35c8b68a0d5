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
    from collections.abc import Iterator, Sequence

    from hloscope.analyses.estimate import EstimateAnalysis, ModelFlopsFrom
    from hloscope.analyses.kernels import ControlComputation
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


def estimate_report(
    loaded: Loaded,
    figures: Figures | None = None,
    model_flops: float | None = None,
    saving_everything: bool = True,
) -> EstimateReport:
    """Estimate a program compiled for a platform (`Loaded.compilation` made for
    `--for`): its kernels, collectives and lines, with `figures` (by default the
    published ones of the platform). `model_flops`: the model's flops for one step,
    all devices together (`--model-flops`), MFU's; by default, the executed flops of
    a step that recomputes nothing, or, `saving_everything`, of the step with
    `jax.checkpoint` regions compiled again with each saving everything."""
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
    costs = compiled_kernel_costs(loaded, _kernel_names(computations))
    fusions = analyze_fusions(
        loaded.module, source_root=os.getcwd(), lowered=lowered_frames(loaded)
    )
    compilation = loaded.compilation
    cost = compilation.cost if compilation is not None else None
    program_flops = cost.get("flops") if cost else None
    compiled_for = loaded.source.compiled_for
    devices = compiled_for.devices if compiled_for is not None else 1
    lowering = loaded.lowering
    recomputes = lowering.checkpointed if lowering is not None else None
    per_device = model_flops / devices if model_flops is not None else None
    model_flops_from: ModelFlopsFrom = "given"
    saved_notes: tuple[str, ...] = ()
    if per_device is None and recomputes and saving_everything:
        per_device, saved_notes = _flops_saving_everything(loaded)
        model_flops_from = "saving everything"
    analysis = analyze_estimate(
        loaded.module,
        computations,
        costs,
        figures,
        fusions,
        program_flops=program_flops,
        slices=target.slices,
        given_model_flops=per_device,
        recomputes=recomputes,
        model_flops_from=model_flops_from,
    )
    notes = loaded.notes + saved_notes + _utilization_notes(analysis, recomputes, devices)
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


def _kernel_names(computations: Sequence[ControlComputation]) -> Iterator[str]:
    """The kernels XLA's cost analysis is asked about: those that run, no collective."""
    for computation in computations:
        for kernel in computation.kernels:
            if kernel.runs_kernel and not kernel.collectives:
                yield kernel.name


def _flops_saving_everything(loaded: Loaded) -> tuple[float | None, tuple[str, ...]]:
    """The model's flops per device: those the step executes compiled again with every
    `jax.checkpoint` saving everything (`sources.estimate.everything_saved`), counted
    as the estimate counts the step's; None, and a note saying why, where that
    program could not be made."""
    from hloscope.analyses.estimate import step_flops
    from hloscope.analyses.kernels import program_kernels
    from hloscope.errors import HloscopeError
    from hloscope.sources.estimate import compiled_kernel_costs, everything_saved

    try:
        saved = everything_saved(loaded)
        computations = program_kernels(saved.module)
        costs = compiled_kernel_costs(saved, _kernel_names(computations))
    except HloscopeError as error:
        return None, (
            "the step compiled again with every jax.checkpoint saving everything, for "
            f"MFU's flops, failed: {error}",
        )
    return step_flops(saved.module, computations, costs), (
        "MFU's flops are those of the step compiled again with every jax.checkpoint "
        "saving everything (jax.checkpoint_policies.everything_saveable), which "
        "recomputes nothing: XLA's cost analysis of each of its kernels, times its runs "
        f"(compiled in {saved.load_seconds:.3g} s)",
    )


MODEL_FLOPS_HINT = (
    "give the model's flops for one step, all devices together, with --model-flops N "
    "(a transformer's training step: about 6 x parameters x tokens)"
)


def _utilization_notes(
    analysis: EstimateAnalysis, recomputes: bool | None, devices: int
) -> tuple[str, ...]:
    """Which flops MFU and HFU are of, where that needs saying."""
    if analysis.model_flops_from == "no recomputation":
        return (
            "MFU = HFU: the step holds no jax.checkpoint region, so it recomputes "
            "nothing and the flops it executes are the model's",
        )
    if analysis.model_flops_from == "saving everything":
        return ()
    if analysis.model_flops_from == "given":
        model = analysis.model_flops or 0.0
        if model > analysis.flops * 1.01:
            return (
                f"the model's flops given ({model * devices:.4g} a step, {model:.4g} on "
                f"each of {devices} devices) are more than the step executes "
                f"({analysis.flops:.4g} a device): --model-flops is for all devices "
                "together",
            )
        return ()
    why = (
        "the step holds jax.checkpoint regions, whose backward pass recomputes part of "
        "the forward: the flops it executes (HFU's) count more than the model's, and "
        "the step saving everything could not be compiled"
        if recomputes
        else "whether the step recomputes part of its forward (jax.checkpoint) is not "
        "known here (no function was traced: a dump, or a stage given as it is)"
    )
    return (f"MFU is not known: {why}; {MODEL_FLOPS_HINT}",)


def estimate_target(
    target: str, options: LoadOptions, model_flops: float | None = None
) -> EstimateReport:
    """`profile TARGET --for SPEC`: load the target compiled for the platform and
    estimate it; `model_flops`, MFU's (`estimate_report`)."""
    from hloscope.hardware_figures import figures_for
    from hloscope.sources.estimate import estimate_loaded

    # The figures first: a platform without them is refused before compiling.
    figures = figures_for(options.compile_for) if options.compile_for else None
    return estimate_report(estimate_loaded(target, options), figures, model_flops)


ENTRY = ReportEntry(
    report=EstimateReport,
    json="hloscope.render.estimate_json:estimate_json",
    text="hloscope.render.text.estimate:render_estimate",
)
