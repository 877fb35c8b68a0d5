"""The core that every front end calls: load a target, build the reports.

The command line, the browser and the Python API all go through these functions,
so they never disagree. Reports are frozen dataclasses; renderers in
`hloscope.render` turn them into text or JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from hloscope.analyses.placement import Placement, analyze_placement
from hloscope.analyses.structure import Structure, analyze_structure
from hloscope.sources.loader import Loaded, LoadOptions, Source, load, optimized

__all__ = [
    "InspectReport",
    "LoadOptions",
    "Loaded",
    "PlacementReport",
    "Timings",
    "inspect_report",
    "load",
    "optimized",
    "placement_report",
]


@dataclasses.dataclass(frozen=True)
class Timings:
    """Wall times of the pipeline's stages, in seconds (None: the stage did not run
    here)."""

    load_seconds: float
    """Everything: import, lowering, compiling, parsing."""
    lower_seconds: float | None
    """`jax.jit(f).lower(...)`."""
    compile_seconds: float | None
    """`.compile()` (XLA's optimizations and code generation)."""


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
    placement: Placement | None = None
    """Compute placement, memory kinds, transfers, shardings and collectives."""


def inspect_report(loaded: Loaded) -> InspectReport:
    """Build the `inspect` report of a loaded target."""
    lowering = loaded.lowering
    compilation = loaded.compilation
    cost = None
    if compilation is not None and compilation.cost:
        cost = compilation.cost
    elif lowering is not None and lowering.cost:
        cost = lowering.cost
    return InspectReport(
        source=loaded.source,
        structure=analyze_structure(loaded.module),
        timings=Timings(
            load_seconds=loaded.load_seconds,
            lower_seconds=lowering.lower_seconds if lowering is not None else None,
            compile_seconds=compilation.compile_seconds if compilation is not None else None,
        ),
        cost=cost,
        memory=compilation.memory if compilation is not None else None,
        notes=loaded.notes,
        placement=analyze_placement(loaded.module),
    )


@dataclasses.dataclass(frozen=True)
class PlacementReport:
    """Where a module's ops run and where its data lives: compute types, host
    regions, memory kinds, transfers, shardings and collectives."""

    source: Source
    placement: Placement
    notes: tuple[str, ...]


def placement_report(loaded: Loaded) -> PlacementReport:
    """Build the `placement` report of a loaded target."""
    return PlacementReport(
        source=loaded.source, placement=analyze_placement(loaded.module), notes=loaded.notes
    )
