"""The `memory` report: what is live at the memory peak of the optimized module."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hloscope.reports.entry import ReportEntry
from hloscope.source_text import line_texts
from hloscope.stages import Source

if TYPE_CHECKING:
    from hloscope.analyses.fusions import LoweredFrames
    from hloscope.analyses.memory import DeviceFit, MemoryAnalysis
    from hloscope.analyses.params import ParameterUsage
    from hloscope.ir.model import Module
    from hloscope.sources.loader import Loaded
    from hloscope.sources.memory import BufferDumps


@dataclasses.dataclass(frozen=True)
class MemoryReport:
    """What is live at the memory peak of the optimized module, from XLA's buffer
    assignment and live ranges, mapped to source lines."""

    source: Source
    module: str | None
    """The module's name (`jit_f`)."""
    analysis: MemoryAnalysis
    files: tuple[str, ...]
    """The dump files read (a dump folder's); empty when hloscope compiled the target
    with XLA dumping into a temporary folder."""
    line_texts: Mapping[str, str]
    """The code of each source line named (`file.py:LINE` -> text), where readable."""
    notes: tuple[str, ...]
    fit: DeviceFit | None = None
    """Whether it fits a device of the platform it was compiled for (`--for`); None for
    the local backend."""

    @property
    def does_not_fit(self) -> bool:
        """XLA refused it, or it needs more than the device's memory: a finding (exit 1)."""
        return self.fit is not None and self.fit.fits is False


def memory_report(buffers: BufferDumps) -> MemoryReport:
    """Build the `memory` report of XLA's buffer assignment and live ranges of an
    optimized module (`hloscope.sources.memory`)."""
    from hloscope.analyses.fusions import lowered_user_frames
    from hloscope.analyses.memory import device_fit
    from hloscope.analyses.params import analyze_params

    loaded = buffers.loaded
    usage = analyze_params(loaded.module, loaded.lowering)
    lowered = loaded.lowered_model()
    frames = lowered_user_frames(lowered) if lowered is not None else None
    analysis = buffers_analysis(buffers, usage, frames, result_names(loaded, lowered))
    notes = loaded.notes + analysis.notes
    refused = buffers.refused.xla_message if buffers.refused is not None else None
    return MemoryReport(
        source=loaded.source,
        module=loaded.module.name,
        analysis=analysis,
        files=buffers.files,
        line_texts=line_texts(
            s
            for b in (
                *analysis.buffers_at_peak,
                *(analysis.busiest.buffers if analysis.busiest else ()),
                *(b for space in analysis.memory_spaces for b in space.buffers_at_peak),
            )
            for s in b.sources
        ),
        notes=notes,
        fit=device_fit(analysis, loaded.source.compiled_for, refused),
    )


def result_names(loaded: Loaded, lowered: Module | None) -> dict[int, str]:
    """The name of each result of the optimized module, as every view names results
    (`analyses.params.result_paths`: the output's path, `model.w1`); where that has
    none, JAX's `jax.result_info`, read from the lowered module where XLA's converted
    module does not keep it (JAX's results are XLA's outputs one for one)."""
    from hloscope.analyses.params import result_paths

    module = loaded.module
    entry = module.entry
    source = lowered.entry if lowered is not None else None
    names: dict[int, str] = {}
    if entry is not None and source is not None and len(source.results) == len(entry.results):
        names = {r.index: r.info for r in source.results if r.info}
    names.update(result_paths(module, loaded.lowering))
    return names


def buffers_analysis(
    buffers: BufferDumps,
    usage: ParameterUsage,
    frames: LoweredFrames | None,
    results: Mapping[int, str] | None = None,
) -> MemoryAnalysis:
    """XLA's buffer assignment and live ranges analysed: buffers named by the paths of
    `usage` (the optimized module's parameters) and mapped to the user's lines through
    `frames` (the lowered module's), which a caller that has them already passes in;
    `results`: the path of each result, where the optimized module does not say it."""
    from hloscope.analyses.memory import analyze_memory

    loaded = buffers.loaded
    paths = {p.hlo_index: p.path for p in usage.parameters if p.hlo_index is not None}
    compilation = loaded.compilation
    return analyze_memory(
        buffers.assignment,
        buffers.live,
        loaded.module,
        paths,
        compilation.memory if compilation is not None and not buffers.dumped else None,
        source_root=os.getcwd(),
        lowered=frames,
        result_names=results,
        space_names={s.color: s.name for s in buffers.spaces},
    )


def loaded_memory_report(loaded: Loaded) -> MemoryReport:
    """The `memory` report of a loaded target: its dump folder's files, or else the
    target compiled again with XLA dumping its buffer assignment."""
    from hloscope.sources.memory import loaded_memory_dumps

    return memory_report(loaded_memory_dumps(loaded))


ENTRY = ReportEntry(
    report=MemoryReport,
    json="hloscope.render.json:memory_json",
    text="hloscope.render.text.memory:render_memory",
    tab="hloscope.tui.views.memory:VIEW",
)
