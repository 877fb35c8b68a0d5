"""The `fusions` report: what XLA fused, mapped back to the source lines."""

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
    from hloscope.analyses.fusions import FusionAnalysis, FusionSummary
    from hloscope.sources.loader import Loaded


@dataclasses.dataclass(frozen=True)
class FusionsReport:
    """What XLA fused in the optimized module, mapped back to the source lines."""

    source: Source
    module: str | None
    """The module's name (`jit_mlp`)."""
    analysis: FusionAnalysis
    summary: FusionSummary
    """The analysis in numbers: fusions by kind, fused and unfused ops."""
    line_texts: Mapping[str, str]
    """The code of each source line the analysis names (`file.py:LINE` -> text),
    for the files readable here."""
    timings: Timings
    notes: tuple[str, ...]


def fusions_report(loaded: Loaded) -> FusionsReport:
    """Build the `fusions` report, compiling the target first when what was loaded is
    not the optimized module."""
    from hloscope.analyses.fusions import analyze_fusions, inner_jits, summarize_fusions

    lowered = lowered_frames(loaded)
    loaded = loaded.optimized()
    analysis = analyze_fusions(loaded.module, source_root=os.getcwd(), lowered=lowered)
    notes = loaded.notes
    lowering = loaded.lowering
    jits = inner_jits(analysis)
    if lowering is not None and lowering.kind == "function" and jits:
        crossing = len(analysis.crossing_jits)
        combine = "fusion here combines" if crossing == 1 else "fusions here combine"
        notes += (
            f"{lowering.name} is not jitted, so hloscope compiled it under one jax.jit; "
            f"called as it is, its jits ({', '.join(jits)}) run as separate XLA programs "
            f"and nothing fuses across them ({crossing} {combine} ops of different jits). "
            "Point hloscope at each jit to see the programs that run.",
        )
    return FusionsReport(
        source=loaded.source,
        module=loaded.module.name,
        analysis=analysis,
        summary=summarize_fusions(analysis),
        line_texts=line_texts(line.source for line in analysis.lines),
        timings=stage_timings(loaded),
        notes=notes,
    )


ENTRY = ReportEntry(
    report=FusionsReport,
    json="hloscope.render.json:fusions_json",
    text="hloscope.render.text.fusions:render_fusions",
    tab="hloscope.tui.views.fusions:VIEW",
)
