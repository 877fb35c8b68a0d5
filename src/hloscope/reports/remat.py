"""The `remat` report: what the backward pass keeps from the forward."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hloscope.reports.entry import ReportEntry
from hloscope.source_text import line_texts

if TYPE_CHECKING:
    from hloscope.analyses.remat import RematAnalysis
    from hloscope.sources.remat import RematSource
    from hloscope.stages import CompiledFor


@dataclasses.dataclass(frozen=True)
class RematReport:
    """The residuals of a differentiated function, its checkpoint regions and their
    policies, and (compiled) the residuals' share of the memory peak."""

    target: str
    analysis: RematAnalysis
    line_texts: Mapping[str, str]
    """The code of each source line named (`file.py:LINE` -> text), where readable."""
    notes: tuple[str, ...]
    compiled_for: CompiledFor | None = None
    """What the gradient was compiled for (`--compile`, `--for`); None uncompiled."""

    @property
    def has_unmatched(self) -> bool:
        """A policy names a checkpoint name the program never gives (`--strict`)."""
        return bool(self.analysis.unmatched)


def remat_report(source: RematSource) -> RematReport:
    """Build the `remat` report of JAX's residuals of a target
    (`hloscope.sources.remat`)."""
    from hloscope.analyses.remat import analyze_remat, residuals_at_peak
    from hloscope.reports.memory import memory_report

    notes = list(source.notes)
    compiled_for = None
    # The compiled program's partitions, where it was compiled.
    devices = (source.buffers.loaded.module.num_partitions or 1) if source.buffers else 1
    analysis = analyze_remat(source.facts, devices)
    if source.buffers is not None:
        compiled_for = source.buffers.loaded.source.compiled_for
        memory = memory_report(source.buffers).analysis
        # One device's buffers of a partitioned program: its residuals' shards.
        peak = residuals_at_peak(analysis, memory.peak_bytes, memory.buffers_at_peak, devices)
        analysis = dataclasses.replace(analysis, peak=peak)
    lines = {r.source for r in analysis.residuals if r.source}
    lines |= {
        op.source for region in analysis.regions for op in region.fact.recomputed if op.source
    }
    lines |= {region.fact.source for region in analysis.regions if region.fact.source}
    return RematReport(
        target=source.target,
        analysis=analysis,
        line_texts=line_texts(sorted(lines)),
        notes=tuple(notes),
        compiled_for=compiled_for,
    )


ENTRY = ReportEntry(
    report=RematReport,
    json="hloscope.render.remat_json:remat_json",
    text="hloscope.render.text.remat:render_remat",
    tab="hloscope.tui.views.remat:VIEW",
)
