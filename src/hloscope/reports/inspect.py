"""The `inspect` report: the overview of a module."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hloscope.reports.common import Timings, stage_timings
from hloscope.reports.entry import ReportEntry
from hloscope.stages import OPTIMIZED, Source

if TYPE_CHECKING:
    from hloscope.analyses.fusions import FusionSummary
    from hloscope.analyses.params import ParameterUsage
    from hloscope.analyses.placement import Placement
    from hloscope.analyses.structure import Structure
    from hloscope.sources.loader import Loaded


@dataclasses.dataclass(frozen=True)
class InspectReport:
    """The overview of a module: where it came from, its structure, and what JAX and
    XLA report about it."""

    source: Source
    structure: Structure
    timings: Timings
    cost: Mapping[str, float] | None
    """XLA's cost analysis: `flops`, `transcendentals`, `bytes_accessed`; of the
    optimized module when compiled here, else of the lowered one."""
    memory: Mapping[str, int] | None
    """XLA's memory analysis of the compiled executable (bytes of arguments, outputs,
    temporaries, generated code)."""
    notes: tuple[str, ...]
    fusions: FusionSummary | None = None
    """What XLA fused, when the module read is the optimized one."""
    params: ParameterUsage | None = None
    """Parameter usage of the entry (the `params` view), summarised by renderers."""
    placement: Placement | None = None
    """Compute placement, memory kinds, transfers, shardings and collectives."""
    cost_counts_loop_bodies_once: bool = False
    """The module has a loop, whose body XLA's cost analysis counts once however many
    times it runs: the cost is XLA's number, said to be so."""


def inspect_report(loaded: Loaded) -> InspectReport:
    """Build the `inspect` report of a loaded target."""
    from hloscope.analyses.params import analyze_params
    from hloscope.analyses.structure import analyze_structure
    from hloscope.reports.placement import loaded_placement

    lowering = loaded.lowering
    compilation = loaded.compilation
    cost = None
    notes = loaded.notes
    compiled_for = loaded.source.compiled_for
    if compilation is not None and compilation.cost:
        cost = compilation.cost
    elif compiled_for is not None and compiled_for.spec is not None:
        # The lowered module's cost is this machine's estimate, not the platform's.
        notes += (
            f"no cost: XLA's compiler for {compiled_for.spec} has no cost analysis "
            "(cost_analysis() is unimplemented there)",
        )
    elif lowering is not None and lowering.cost:
        cost = lowering.cost
    structure = analyze_structure(loaded.module)
    return InspectReport(
        source=loaded.source,
        structure=structure,
        timings=stage_timings(loaded),
        cost=cost,
        memory=compilation.memory if compilation is not None else None,
        notes=notes,
        fusions=_fusion_summary(loaded) if loaded.source.stage == OPTIMIZED else None,
        params=analyze_params(loaded.module, lowering),
        placement=loaded_placement(loaded),
        cost_counts_loop_bodies_once=cost is not None and has_loop(structure),
    )


def has_loop(structure: Structure) -> bool:
    """Whether the module has a `while` loop (a `scan`, a `fori_loop`)."""
    return any(name.rpartition(".")[2] == "while" for name in structure.op_counts)


def _fusion_summary(loaded: Loaded) -> FusionSummary:
    from hloscope.analyses.fusions import analyze_fusions, summarize_fusions

    return summarize_fusions(analyze_fusions(loaded.module))


ENTRY = ReportEntry(
    report=InspectReport,
    json="hloscope.render.json:inspect_json",
    text="hloscope.render.text.inspect:render_inspect",
    tab="hloscope.tui.views.overview:VIEW",
)
