"""The core that every front end calls: load a target, build the reports.

The command line, the browser and the Python API all go through these functions,
so they never disagree. Reports are frozen dataclasses; renderers in
`hloscope.render` turn them into text or JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from hloscope.analyses.params import ParameterUsage, analyze_params
from hloscope.analyses.structure import Structure, analyze_structure
from hloscope.sources.loader import Loaded, LoadOptions, Source, load, optimized

__all__ = [
    "InspectReport",
    "LoadOptions",
    "Loaded",
    "ParamsReport",
    "Timings",
    "inspect_report",
    "load",
    "optimized",
    "params_report",
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
    params: ParameterUsage | None = None
    """Parameter usage of the entry (the `params` view), summarised by renderers."""


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
        params=analyze_params(loaded.module, lowering),
    )


@dataclasses.dataclass(frozen=True)
class ParamsReport:
    """The `params` view: every argument mapped to its HLO parameter, with status,
    donation, sharding and memory kind."""

    source: Source
    module: str | None
    """The module's name (`jit_f`)."""
    usage: ParameterUsage
    notes: tuple[str, ...]
    """The load's notes and the analysis's."""

    def has_status(self, statuses: tuple[str, ...]) -> bool:
        """Whether any argument has one of `statuses` (for `--fail-on`)."""
        return bool(self.usage.with_status(*statuses))


def params_report(loaded: Loaded) -> ParamsReport:
    """Build the `params` report of a loaded target."""
    usage = analyze_params(loaded.module, loaded.lowering)
    return ParamsReport(
        source=loaded.source,
        module=loaded.module.name,
        usage=usage,
        notes=loaded.notes + usage.notes,
    )
